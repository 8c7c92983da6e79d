"""arq ``WorkerSettings`` for ``roost worker`` (or ``arq workers.settings.WorkerSettings``).

Redis comes from REDIS_URL and PostgreSQL from DATABASE_URL, read once at import
(``roost worker`` sets both before importing this module in embedded mode).
"""

from __future__ import annotations

from typing import Any, ClassVar

from arq import cron
from arq.connections import RedisSettings

from app.database import create_engine
from app.settings import get_settings
from workers.counters import compact_counters


def redis_settings_from_env() -> RedisSettings:
    """Return arq's RedisSettings for REDIS_URL (redis://, rediss:// or unix://), or
    arq's default (localhost:6379) when it is unset."""
    url = get_settings().redis_url
    return RedisSettings.from_dsn(url) if url else RedisSettings()


async def on_startup(ctx: dict[str, Any]) -> None:
    """Put an AsyncEngine for DATABASE_URL in ``ctx['engine']``.

    Raises RuntimeError when DATABASE_URL is unset (``roost worker`` sets it).
    """
    settings = get_settings()
    if not settings.database_url:
        raise RuntimeError("DATABASE_URL is not set; start the worker with `roost worker`.")
    ctx["engine"] = create_engine(
        settings.database_url,
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_max_overflow,
    )


async def on_shutdown(ctx: dict[str, Any]) -> None:
    """Close the engine's connections."""
    engine = ctx.get("engine")
    if engine is not None:
        await engine.dispose()


class WorkerSettings:
    """What ``arq`` runs: job functions, cron jobs and start-up/shut-down hooks."""

    functions: ClassVar[list[Any]] = []
    cron_jobs: ClassVar[list[Any]] = [
        # Every 10 minutes; unique=True (arq's default) so two workers never overlap.
        cron(compact_counters, minute=set(range(0, 60, 10)), run_at_startup=False),
    ]
    on_startup = on_startup
    on_shutdown = on_shutdown
    redis_settings = redis_settings_from_env()
