"""What the commands share: the URLs in use, an engine, migrating to head."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import TYPE_CHECKING

from app.embedded import ServiceURLs, ensure_database
from app.settings import Settings, get_settings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger("roost.cli")


def _use(settings: Settings, urls: ServiceURLs) -> Settings:
    """Export the URLs in use to the environment; ``settings`` with them filled in."""
    os.environ["DATABASE_URL"] = urls.database_url
    if urls.redis_url:
        os.environ["REDIS_URL"] = urls.redis_url
    get_settings.cache_clear()
    return settings.model_copy(
        update={"database_url": urls.database_url, "redis_url": urls.redis_url}
    )


def _engine(settings: Settings, url: str) -> AsyncEngine:
    from app.database import create_engine

    return create_engine(url, pool_size=2, max_overflow=2)


def _migrate(url: str) -> None:
    """Create the database if missing, then apply every migration (idempotent)."""
    from app.migrate import upgrade

    t0 = time.monotonic()
    created = asyncio.run(ensure_database(url))
    upgrade(url)
    log.info(
        "database %s, migrated to head in %.1f s",
        "created" if created else "present",
        time.monotonic() - t0,
    )
