"""arq worker configuration for ``roost worker`` (or ``arq workers.settings.WorkerSettings``).

:func:`worker_options` builds the options from a :class:`Settings` (the tests run a
real arq ``Worker`` from it); :class:`WorkerSettings` is the same, read from the
environment at import (``roost worker`` sets DATABASE_URL/REDIS_URL in embedded mode).
"""

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
    """arq's RedisSettings for REDIS_URL (redis://, rediss:// or unix://), or arq's
    default (localhost:6379) when it is unset.

    While Redis is down (a restart) every queue command waits and retries, 50 ms to
    1 s apart, for as long as it takes: the worker pauses and resumes by itself instead
    of crashing on the first refused connection.
    """
    redis = RedisSettings.from_dsn(settings.redis_url) if settings.redis_url else RedisSettings()
    # OSError too: a refused connection is retried as well (redis-py raises it as
    # such from inside connect(), before wrapping it in its ConnectionError).
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
    """Keyword arguments for ``arq.worker.Worker``: jobs, crons, hooks and limits.

    A job runs at most JOB_TIMEOUT_S (5 s); arq re-runs the job of a SIGKILLed worker
    once its in-progress key expires (timeout + 10 s), so within about 15 s. Results
    are not kept, so an (event, consumer) job id is free again once it finished (the job
    itself skips pairs already done). ``relay=False``: no outbox relay loop in
    this worker (tests run a second worker on the same database without one).
    """

    async def on_startup(ctx: dict[str, Any]) -> None:
        if not settings.database_url or not settings.redis_url:
            raise RuntimeError(
                "DATABASE_URL or REDIS_URL is not set; start the worker with `roost worker`."
            )
        # Everything is built once, by the composition root (app/container.py): the
        # engine, the feed store's Redis (REDIS_URL's, or the Redis Cluster of
        # FEED_REDIS_URL / FEED_REDIS_CLUSTER_NODES; arq stays on REDIS_URL), the push
        # sender, the one Delivery and every outbox consumer of the registry.
        ctx[DEPS] = deps = build_worker(settings)
        # The outbox relay: a loop of this process rather than a cron job, so that a
        # poll every second does not fill the job log.
        if relay:
            deps.relay = asyncio.create_task(relay_forever(ctx))
        # The media consumer's own loop, on its own queue (workers/media.py).
        if deps.media is not None:
            # Temporary folders of media jobs of processes that were killed mid-job.
            swept = await asyncio.to_thread(sweep_work_dirs)
            if swept:
                log.info("deleted %d temporary folders of interrupted media jobs", swept)
            deps.media_worker = media_worker(settings, ctx, redis_settings_for(settings))
            deps.media_task = asyncio.create_task(deps.media_worker.async_run())
        # The liveness heartbeat (app/worker_health.py), on arq's own Redis connection;
        # it stops when the relay loop died, so the health check fails.
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
        # The worker's own series (app/metrics.py) on METRICS_HOST:WORKER_METRICS_PORT.
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
            # Every 10 minutes; unique (arq's default), so two workers never overlap.
            cron(compact_counters, minute=set(range(0, 60, 10)), run_at_startup=False),
            # Hourly: the digest of yesterday's follows past the cap (idempotent).
            cron(follow_digest, minute={15}, run_at_startup=False),
            # Every 10 minutes and at start: people search's ranking signal.
            # Within JOB_TIMEOUT_S like every job: arq holds a killed worker's jobs for the
            # longest limit of any function + 10 s before another worker may run them.
            cron(refresh_search_ranks_job, minute=set(range(5, 60, 10)), run_at_startup=True),
            # Every minute: purge accounts whose deletion is due, a few seconds at a time
            # (batched, resumable; within JOB_TIMEOUT_S like every job).
            cron(purge_accounts, second={40}, run_at_startup=False),
            # Hourly: delete expired data export archives.
            cron(prune_data_exports, minute={35}, run_at_startup=False),
            # Hourly: forget the purged accounts' usernames whose hold is over.
            cron(prune_released_names, minute={36}, run_at_startup=False),
            # Hourly: expire the uploads no post used, deleting their bytes.
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
