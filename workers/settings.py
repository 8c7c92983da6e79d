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

from app.database import create_engine
from app.metrics import WorkerMetrics, redis_client
from app.settings import Settings, get_settings
from domain.accounts.consumers import account_handlers
from domain.feed.config import FeedStores
from domain.feed.consumers import feed_handlers
from domain.feedstore import FeedRedis
from domain.notifications.consumers import notification_handlers
from domain.notifications.delivery import Delivery
from domain.notifications.fcm import FcmTransport, ServiceAccount
from domain.notifications.push import (
    DevicePushSender,
    LoggingTransport,
    PushTransport,
    RetryPolicy,
)
from domain.outbox.process import compose_handlers
from domain.realtime import RealtimePublisher
from domain.realtime.consumers import engagement_handlers
from domain.realtime.feed_items import FeedItemNotifier
from workers.accounts import prune_data_exports, purge_accounts
from workers.counters import compact_counters
from workers.events import HANDLE_EVENT, handle_outbox_event, relay_forever
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


def push_transport(settings: Settings) -> PushTransport:
    """The push provider of PUSH_PROVIDER: ``log`` (the default) or ``fcm`` (FCM HTTP v1
    with the service account of FCM_CREDENTIALS_FILE). Raises FcmConfigError when the
    key file cannot be read, so a misconfigured worker fails at start."""
    if settings.push_provider == "fcm":
        assert settings.fcm_credentials_file is not None  # checked by Settings
        account = ServiceAccount.from_file(settings.fcm_credentials_file, settings.fcm_project_id)
        return FcmTransport(
            account, endpoint=settings.fcm_endpoint, timeout_s=settings.push_request_timeout_s
        )
    return LoggingTransport()


def worker_options(settings: Settings, *, relay: bool = True) -> dict[str, Any]:
    """Keyword arguments for ``arq.worker.Worker``: jobs, crons, hooks and limits.

    A job runs at most JOB_TIMEOUT_S (5 s); arq re-runs the job of a SIGKILLed worker
    once its in-progress key expires (timeout + 10 s), so within about 15 s. Results
    are not kept, so an outbox event's job id is free again once it finished (the job
    itself skips events already dispatched). ``relay=False``: no outbox relay loop in
    this worker (tests run a second worker on the same database without one).
    """

    async def on_startup(ctx: dict[str, Any]) -> None:
        if not settings.database_url or not settings.redis_url:
            raise RuntimeError(
                "DATABASE_URL or REDIS_URL is not set; start the worker with `roost worker`."
            )
        ctx["engine"] = engine = create_engine(
            settings.database_url,
            pool_size=settings.db_pool_size,
            max_overflow=settings.db_max_overflow,
            connect_timeout_s=settings.db_connect_timeout_s,
            pool_timeout_s=settings.db_pool_timeout_s,
        )
        # Timelines, presence and pub/sub: REDIS_URL's Redis (errors count in
        # roost_redis_errors_total{client="worker"}) or the feed store's Redis Cluster
        # (FEED_REDIS_URL / FEED_REDIS_CLUSTER_NODES); arq stays on REDIS_URL.
        feed_redis: FeedRedis | None
        if settings.feed_redis_url or settings.feed_cluster_nodes:
            feed_redis = settings.open_feed_redis()
            assert feed_redis is not None  # None only when no Redis at all is configured
            ctx["feed_redis"] = feed_redis
        else:
            ctx["feed_redis"] = feed_redis = FeedRedis(
                redis_client(
                    settings.redis_url,
                    client="worker",
                    socket_connect_timeout=settings.redis_connect_timeout_s,
                )
            )
        ctx["feed_stores"] = stores = FeedStores.on(feed_redis, settings.feed_config)
        ctx["settings"] = settings
        # Real time: feed items, notifications and engagement changes are PUBLISHed to
        # the API processes' subscriptions (domain.realtime).
        realtime = RealtimePublisher(feed_redis)
        feed_items = FeedItemNotifier(engine, realtime, settings.feed_config)
        ctx.setdefault("notification_publisher", realtime)
        # Notifications: pushes go to each device of the recipient through PUSH_PROVIDER;
        # ctx["notification_publisher"] (a NotificationPublisher) publishes for real time.
        ctx["notification_config"] = notify = settings.notification_config
        ctx["push_transport"] = transport = push_transport(settings)
        push = DevicePushSender(
            engine,
            transport,
            RetryPolicy(max_attempts=settings.push_max_attempts, budget_s=settings.push_budget_s),
        )
        publisher = ctx.get("notification_publisher")
        ctx["notification_delivery"] = Delivery(engine, push=push, publisher=publisher)
        # post.created and follow.created have both a feed and a notification handler:
        # composed, they run in turn (each idempotent; a retry reruns both).
        ctx["handlers"] = compose_handlers(
            feed_handlers(engine, stores, settings.feed_config, feed_items),
            notification_handlers(engine, notify, push=push, publisher=publisher),
            engagement_handlers(realtime, api_publishes=settings.realtime_engagement == "api"),
            account_handlers(engine, settings.accounts_config),
        )
        ctx["max_attempts"] = settings.job_attempts
        # The outbox relay: a loop of this process rather than a cron job, so that a
        # poll every second does not fill the job log.
        if relay:
            ctx["relay"] = asyncio.create_task(relay_forever(ctx))
        # The worker's own series (app/metrics.py) on METRICS_HOST:WORKER_METRICS_PORT.
        ctx["metrics"] = WorkerMetrics(engine, settings.metrics_host, settings.worker_metrics_port)

    async def on_shutdown(ctx: dict[str, Any]) -> None:
        if (metrics := ctx.get("metrics")) is not None:
            await metrics.close()
        if (relay := ctx.get("relay")) is not None:
            relay.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await relay
        if (transport := ctx.get("push_transport")) is not None and hasattr(transport, "aclose"):
            await transport.aclose()
        if (engine := ctx.get("engine")) is not None:
            await engine.dispose()
        if (redis := ctx.get("feed_redis")) is not None:
            await redis.aclose()

    return {
        "functions": [
            func(
                handle_outbox_event,
                name=HANDLE_EVENT,
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
            cron(refresh_search_ranks_job, minute=set(range(5, 60, 10)), run_at_startup=True),
            # Every minute: purge accounts whose deletion is due, a few seconds at a time
            # (batched, resumable; within JOB_TIMEOUT_S like every job).
            cron(purge_accounts, second={40}, run_at_startup=False),
            # Hourly: delete expired data export archives.
            cron(prune_data_exports, minute={35}, run_at_startup=False),
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
