"""arq configuration for ``roost worker``: :func:`worker_options` from a
:class:`Settings`; :class:`WorkerSettings`, the same from the environment at import."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from arq import cron, func
from arq.connections import RedisSettings
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from app.container import (
    build_worker,
    push_transport,  # noqa: F401  (re-exported: tests and docs)
)
from app.metrics import WorkerMetrics
from app.settings import Settings, get_settings
from app.worker_health import heartbeat_forever
from domain.media.process_post_media import sweep_work_dirs
from domain.outbox.jobs import CONSUME_EVENT
from workers.accounts import prune_data_exports, prune_released_names, purge_accounts
from workers.counters import compact_counters
from workers.deps import DEPS, deps_of
from workers.events import consume_outbox_event, relay_forever
from workers.media import cleanup_uploads_job, media_worker, stop_media_worker
from workers.notifications import follow_digest
from workers.search import refresh_search_ranks_job

log = logging.getLogger("roost.workers")


def redis_settings_for(settings: Settings) -> RedisSettings:
    """arq's RedisSettings for REDIS_URL (unset: localhost:6379); while Redis is down,
    queue commands retry forever, 50 ms to 1 s apart, instead of crashing the worker."""
    redis = RedisSettings.from_dsn(settings.redis_url) if settings.redis_url else RedisSettings()
    # OSError too: redis-py raises a refused connection as such inside connect().
    redis.retry = Retry(
        ExponentialBackoff(cap=1.0, base=0.05),
        retries=-1,
        # redis-py annotates RedisError subclasses only, but retries whatever it is given
        supported_errors=(RedisConnectionError, RedisTimeoutError, OSError),  # type: ignore[arg-type]
    )
    redis.retry_on_error = [RedisConnectionError, RedisTimeoutError]
    redis.conn_retries = 1_000_000  # at start-up too: wait for Redis rather than exit
    return redis


def worker_options(settings: Settings, *, relay: bool = True) -> dict[str, Any]:
    """Keyword arguments for ``arq.worker.Worker``. Results are not kept, so an (event,
    consumer) job id is free once finished. ``relay=False``: no outbox relay loop.
    """

    async def on_startup(ctx: dict[str, Any]) -> None:
        if not settings.database_url or not settings.redis_url:
            raise RuntimeError(
                "DATABASE_URL or REDIS_URL is not set; start the worker with `roost worker`."
            )
        ctx[DEPS] = deps = build_worker(settings)
        # A loop, not a cron job: a poll a second would fill the job log.
        if relay:
            deps.relay = asyncio.create_task(relay_forever(ctx))
        if deps.media is not None:
            swept = await asyncio.to_thread(sweep_work_dirs)
            if swept:
                log.info("deleted %d temporary folders of interrupted media jobs", swept)
            deps.media_worker = media_worker(settings, ctx, redis_settings_for(settings))
            deps.media_task = asyncio.create_task(deps.media_worker.async_run())
        # The heartbeat stops when the relay loop died, so the health check fails.
        relay_task = deps.relay
        deps.heartbeat = asyncio.create_task(
            heartbeat_forever(
                ctx["redis"],
                settings.arq_queue,
                settings.worker_name,
                settings.worker_heartbeat_s,
                alive=lambda: relay_task is None or not relay_task.done(),
            )
        )
        deps.metrics = WorkerMetrics(
            deps.engine, settings.metrics_host, settings.worker_metrics_port
        )

    async def on_shutdown(ctx: dict[str, Any]) -> None:
        if DEPS not in ctx:
            return  # start-up failed before anything was built
        deps = deps_of(ctx)
        if deps.media_worker is not None and deps.media_task is not None:
            await stop_media_worker(
                deps.media_worker, deps.media_task, within=settings.media_job_timeout_s
            )
        if deps.metrics is not None:
            await deps.metrics.close()
        if deps.heartbeat is not None:
            deps.heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await deps.heartbeat
        if deps.relay is not None:
            deps.relay.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await deps.relay
        if deps.services is not None:
            await deps.services.aclose()

    return {
        "functions": [
            func(
                consume_outbox_event,
                name=CONSUME_EVENT,
                max_tries=settings.job_attempts,
                timeout=settings.job_timeout_s,
            )
        ],
        "cron_jobs": [
            # Unique (arq's default): two workers never overlap.
            cron(compact_counters, minute=set(range(0, 60, 10)), run_at_startup=False),
            cron(follow_digest, minute={15}, run_at_startup=False),
            # Every job stays within JOB_TIMEOUT_S: arq holds a killed worker's jobs for
            # the longest limit of any function + 10 s before another may run them.
            cron(refresh_search_ranks_job, minute=set(range(5, 60, 10)), run_at_startup=True),
            cron(purge_accounts, second={40}, run_at_startup=False),
            cron(prune_data_exports, minute={35}, run_at_startup=False),
            cron(prune_released_names, minute={36}, run_at_startup=False),
            cron(cleanup_uploads_job, minute={45}, run_at_startup=False),
        ],
        "on_startup": on_startup,
        "on_shutdown": on_shutdown,
        "redis_settings": redis_settings_for(settings),
        "queue_name": settings.arq_queue,
        "keep_result": 0,
        "max_jobs": 20,
        "job_timeout": settings.job_timeout_s,
        "poll_delay": 0.05,  # queue pickup latency counts in the fan-out lag
    }


_options = worker_options(get_settings())


class WorkerSettings:
    """What ``arq`` runs (see :func:`worker_options`)."""

    functions = _options["functions"]
    cron_jobs = _options["cron_jobs"]
    on_startup = _options["on_startup"]
    on_shutdown = _options["on_shutdown"]
    redis_settings = _options["redis_settings"]
    queue_name = _options["queue_name"]
    keep_result = _options["keep_result"]
    max_jobs = _options["max_jobs"]
    job_timeout = _options["job_timeout"]
    poll_delay = _options["poll_delay"]
