"""The one composition root: builds each process's infrastructure once and closes it in
reverse order. :class:`Services` is what the API and the worker share; :class:`ApiDeps`
and :class:`WorkerDeps` add what each side reads."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.fcm import FcmTransport, ServiceAccount
from adapters.feedstore import FeedRedis
from adapters.feedstore.publisher import RedisPublisher
from adapters.feedstore.stores import feed_stores
from adapters.mail import LoggingSender, SmtpConfig, SmtpSender
from adapters.media.hashlist import HashList
from adapters.media.processor import PillowAvProcessor
from adapters.search_snapshots import RedisRankedSnapshots
from adapters.session_cache import RedisSessionStore
from adapters.storage.local import LocalObjectStore
from adapters.storage.s3 import S3Config, S3ObjectStore
from app.database import ReadRouting, create_engine
from app.http_guards import HttpGuards
from app.jobs import ArqDispatcher
from app.metrics import WorkerMetrics, redis_client
from app.realtime import Hub
from app.sessions import Doorkeeper, session_store
from app.settings import Settings
from domain.accounts.consumers import accounts_consumer
from domain.feed.config import FeedStores
from domain.feed.consumers import feed_consumer
from domain.feed.ranking_consumers import ranking_consumer
from domain.identity.mail_consumers import mail_consumer
from domain.mail.ports import MailSender
from domain.media.consumers import media_consumer
from domain.media.ports import ObjectStore
from domain.media.process_post_media import MediaServices
from domain.notifications.consumers import notification_consumer
from domain.notifications.delivery import Delivery
from domain.notifications.publish import NotificationPublisher
from domain.notifications.push import DevicePushSender, LoggingTransport, PushTransport, RetryPolicy
from domain.outbox.process import Consumer
from domain.outbox.registry import (
    ACCOUNTS,
    FEED,
    MAIL,
    MEDIA,
    NOTIFICATIONS,
    RANKING,
    REALTIME,
    Registry,
    registry_for,
)
from domain.realtime import RealtimePublisher
from domain.realtime.consumers import realtime_consumer
from domain.realtime.feed_items import FeedItemNotifier
from domain.realtime.queries import EngagementReads
from domain.search.snapshots import RankedSnapshots


@dataclass
class Services:
    """The infrastructure of one process; ``redis``, ``feed_redis`` (REDIS_URL's, or the
    cluster's) and ``dispatcher`` are None without Redis."""

    settings: Settings
    engine: AsyncEngine
    redis: Redis | None
    feed_redis: FeedRedis | None
    clustered: bool
    registry: Registry
    dispatcher: ArqDispatcher | None
    publisher: RealtimePublisher | None
    object_store: ObjectStore | None = None
    _closers: list[Callable[[], Awaitable[Any]]] = field(default_factory=list, repr=False)

    def stores(self, *, rebuild_engine: AsyncEngine | None = None) -> FeedStores | None:
        """The feed stores on ``feed_redis`` (None without Redis)."""
        if self.feed_redis is None:
            return None
        return feed_stores(
            self.feed_redis, self.settings.feed_config, rebuild_engine=rebuild_engine
        )

    def on_close(self, closer: Callable[[], Awaitable[Any]]) -> None:
        """Run ``closer`` at :meth:`aclose` (before what was built earlier)."""
        self._closers.append(closer)

    async def aclose(self) -> None:
        """Close everything built, the last built first; never raises."""
        while self._closers:
            closer = self._closers.pop()
            with contextlib.suppress(Exception):
                await closer()


def build_services(
    settings: Settings,
    *,
    client: Literal["api", "worker"],
    engine: AsyncEngine | None = None,
) -> Services:
    """A process's infrastructure. ``client`` labels its Redis errors; ``engine`` (tests)
    replaces the one built from DATABASE_URL. RuntimeError without DATABASE_URL."""
    if settings.database_url is None:
        raise RuntimeError("DATABASE_URL is not set (use `roost run`, which starts one).")
    closers: list[Callable[[], Awaitable[Any]]] = []
    if engine is None:
        engine = create_engine(
            settings.database_url,
            pool_size=settings.db_pool_size,
            max_overflow=settings.db_max_overflow,
            connect_timeout_s=settings.db_connect_timeout_s,
            pool_timeout_s=settings.db_pool_timeout_s,
        )
        closers.append(engine.dispose)
    # Binary replies: feed members are 16-byte post ids.
    redis = (
        redis_client(
            settings.redis_url,
            client=client,
            socket_connect_timeout=settings.redis_connect_timeout_s,
        )
        if settings.redis_url
        else None
    )
    if redis is not None:
        closers.append(redis.aclose)
    # Timelines, presence and pub/sub: on REDIS_URL's Redis, or on a Redis Cluster.
    clustered = bool(settings.feed_redis_url or settings.feed_cluster_nodes)
    feed_redis = settings.open_feed_redis() if clustered else FeedRedis(redis) if redis else None
    if clustered and feed_redis is not None:
        closers.append(feed_redis.aclose)
    registry = deployment_registry(settings)
    dispatcher = dispatcher_for(settings, engine=engine)
    if dispatcher is not None:
        closers.append(dispatcher.close)
    publisher = RedisPublisher(feed_redis) if feed_redis is not None else None
    object_store = build_object_store(settings)
    aclose = getattr(object_store, "aclose", None)
    if aclose is not None:
        closers.append(aclose)
    return Services(
        settings=settings,
        engine=engine,
        redis=redis,
        feed_redis=feed_redis,
        clustered=clustered,
        registry=registry,
        dispatcher=dispatcher,
        publisher=publisher,
        object_store=object_store,
        _closers=closers,
    )


def build_object_store(settings: Settings) -> ObjectStore:
    """The object store of MEDIA_STORAGE: ``local`` (MEDIA_DIR, served by this API) or
    ``s3`` (its client connects on first use, closed by ``aclose``)."""
    if settings.media_storage == "s3":
        assert settings.s3_quarantine_bucket is not None  # checked by Settings
        return S3ObjectStore(
            S3Config(
                quarantine_bucket=settings.s3_quarantine_bucket,
                delivery_bucket=settings.s3_delivery_bucket or settings.s3_quarantine_bucket,
                region=settings.s3_region,
                endpoint_url=settings.s3_endpoint_url,
                public_endpoint_url=settings.s3_public_endpoint_url,
                access_key_id=settings.s3_access_key_id,
                secret_access_key=settings.s3_secret_access_key,
                addressing_style=settings.s3_addressing_style,
                public_base_url=settings.media_public_base_url,
                if_none_match=settings.s3_upload_if_none_match,
            )
        )
    return LocalObjectStore(
        settings.media_root,
        signing_key=settings.media_signing_secret,
        upload_base_url=settings.api_origin,
        public_base_url=settings.media_public_base_url or settings.api_origin,
    )


@dataclass
class ApiDeps:
    """What the API's view and routes use, closed with :class:`Services`. ``hub`` and
    ``engagement_reads`` are None without Redis, ``reads`` without replicas."""

    services: Services
    stores: FeedStores | None
    hub: Hub | None
    engagement_reads: EngagementReads | None
    reads: ReadRouting | None
    guards: HttpGuards
    sessions: RedisSessionStore | None
    doorkeeper: Doorkeeper
    ranked_snapshots: RankedSnapshots | None


def build_api(settings: Settings, *, engine: AsyncEngine | None = None) -> ApiDeps:
    """The API's dependencies, closed by ``deps.services.aclose()``; RuntimeError without
    DATABASE_URL."""
    services = build_services(settings, client="api", engine=engine)
    engine = services.engine
    # Rebuilds read the primary: a lagging replica could miss a post whose fan-out
    # already skipped the (missing) timeline.
    stores = services.stores(rebuild_engine=engine)
    hub = engagement_reads = None
    if services.feed_redis is not None and services.publisher is not None:
        hub = Hub(services.feed_redis, presence_ttl_s=settings.realtime_presence_ttl_s)
        services.on_close(hub.close)  # it starts on first use
        engagement_reads = EngagementReads(engine)
    reads = None
    if settings.replica_urls and settings.database_url:
        reads = ReadRouting(
            engine,
            settings.database_url,
            settings.replica_urls,
            services.redis,
            max_lag_s=settings.replica_max_lag_s,
            pool_size=settings.db_pool_size,
            max_overflow=settings.db_max_overflow,
        )
        services.on_close(reads.aclose)
    guards = HttpGuards.from_settings(settings)
    services.on_close(guards.aclose)
    # On the guards' Redis: short timeouts, PostgreSQL answers when Redis fails.
    sessions = session_store(guards.redis, settings.token_config)
    doorkeeper = Doorkeeper(
        engine=engine,
        tokens=settings.token_config,
        store=sessions,
        feed_stores=stores,
        feed_config=settings.feed_config,
        guards=guards,
    )
    snapshots = (
        RedisRankedSnapshots(services.redis, settings.search_config.snapshot_ttl)
        if services.redis is not None
        else None
    )
    return ApiDeps(
        services=services,
        stores=stores,
        hub=hub,
        engagement_reads=engagement_reads,
        reads=reads,
        guards=guards,
        sessions=sessions,
        doorkeeper=doorkeeper,
        ranked_snapshots=snapshots,
    )


def deployment_registry(settings: Settings) -> Registry:
    """The event registry of this deployment (REALTIME_ENGAGEMENT: who publishes likes)."""
    return registry_for(api_publishes_engagement=settings.realtime_engagement == "api")


def dispatcher_for(
    settings: Settings, *, engine: AsyncEngine | None = None
) -> ArqDispatcher | None:
    """The arq dispatcher of committed events (None without REDIS_URL); with ``engine``,
    an event it cannot enqueue is handed to the relay at once."""
    if not settings.redis_url:
        return None
    return ArqDispatcher(
        settings.redis_url, settings.arq_queue, deployment_registry(settings), engine=engine
    )


def push_transport(settings: Settings) -> PushTransport:
    """The push provider of PUSH_PROVIDER (``log`` or ``fcm``: FCM HTTP v1). Raises
    FcmConfigError when FCM_CREDENTIALS_FILE cannot be read, so the worker fails at start."""
    if settings.push_provider == "fcm":
        assert settings.fcm_credentials_file is not None  # checked by Settings
        account = ServiceAccount.from_file(settings.fcm_credentials_file, settings.fcm_project_id)
        return FcmTransport(
            account, endpoint=settings.fcm_endpoint, timeout_s=settings.push_request_timeout_s
        )
    return LoggingTransport()


def mail_sender(settings: Settings) -> MailSender:
    """The sender of SMTP_URL, else the logging sender. RuntimeError without SMTP_URL in
    production: mails that go nowhere would lock people out."""
    if settings.smtp_url:
        return SmtpSender(
            SmtpConfig.from_url(
                settings.smtp_url, settings.mail_from, timeout_s=settings.smtp_timeout_s
            )
        )
    if settings.env == "production":
        raise RuntimeError(
            "ROOST_ENV=production needs SMTP_URL (smtp://host:port or smtps://user:pass@host):"
            " without it verification and password reset mails would go nowhere."
        )
    return LoggingSender()


@dataclass
class WorkerDeps:
    """What the worker's jobs use (workers/): typed, built once at the worker's start by
    :func:`build_worker`. Tests build one with only the fields their job reads."""

    engine: AsyncEngine
    settings: Settings = field(default_factory=Settings)
    registry: Registry = field(default_factory=lambda: registry_for(api_publishes_engagement=True))
    consumers: Mapping[str, Consumer] = field(default_factory=dict)
    stores: FeedStores | None = None
    delivery: Delivery | None = None
    max_attempts: int = 5
    services: Services | None = None
    media: MediaServices | None = None  # the media consumer's store, processor and list
    # Set by the worker's start-up (workers/).
    relay: asyncio.Task[None] | None = None
    metrics: WorkerMetrics | None = None
    media_worker: Any = None
    media_task: asyncio.Task[None] | None = None
    heartbeat: asyncio.Task[None] | None = None  # app/worker_health.py

    def with_(self, **changes: Any) -> WorkerDeps:
        return dataclasses.replace(self, **changes)


def build_worker(
    settings: Settings, *, publisher: NotificationPublisher | None = None
) -> WorkerDeps:
    """The worker's dependencies and every consumer of the registry (RuntimeError when a
    routed event type has no handler); ``publisher`` (tests) replaces the real-time one."""
    services = build_services(settings, client="worker")
    engine = services.engine
    stores = services.stores()
    if services.feed_redis is None or stores is None or services.publisher is None:
        raise RuntimeError("REDIS_URL is not set; start the worker with `roost worker`.")
    transport = push_transport(settings)
    if hasattr(transport, "aclose"):
        services.on_close(transport.aclose)
    push = DevicePushSender(
        engine,
        transport,
        RetryPolicy(max_attempts=settings.push_max_attempts, budget_s=settings.push_budget_s),
    )
    realtime = services.publisher
    delivery = Delivery(engine, push=push, publisher=publisher or realtime)
    feed_items = FeedItemNotifier(engine, realtime, settings.feed_config)
    media = build_media(settings, services)
    consumers: dict[str, Consumer] = {
        MEDIA: media_consumer(
            engine,
            media,
            counter_shards=settings.counter_shards,
            dispatcher=services.dispatcher,
        ),
        FEED: feed_consumer(engine, stores, settings.feed_config, feed_items),
        NOTIFICATIONS: notification_consumer(engine, settings.notification_config, delivery),
        REALTIME: realtime_consumer(realtime),
        ACCOUNTS: accounts_consumer(engine, settings.accounts_config, media.store.public_url),
        RANKING: ranking_consumer(engine, stores.signals, stores.trending),
        MAIL: mail_consumer(
            engine, mail_sender(settings), settings.mail_config, settings.mail_token_key
        ),
    }
    check_routes(services.registry, consumers)
    return WorkerDeps(
        engine=engine,
        settings=settings,
        registry=services.registry,
        consumers=consumers,
        stores=stores,
        delivery=delivery,
        max_attempts=settings.job_attempts,
        services=services,
        media=media,
    )


def build_media(settings: Settings, services: Services) -> MediaServices:
    """The media worker's services; a malformed MEDIA_HASHLIST_PATH fails the start."""
    store = services.object_store or build_object_store(settings)
    known_bad = HashList.from_file(
        settings.media_hashlist_path, max_distance=settings.media_hashlist_max_distance
    )
    return MediaServices(
        store=store,
        processor=PillowAvProcessor(),
        known_bad=known_bad,
        config=settings.media_config,
    )


def check_routes(registry: Registry, consumers: Mapping[str, Consumer]) -> None:
    """Raise RuntimeError unless every (event type, consumer) route of ``registry`` has a
    handler in ``consumers``."""
    missing = [
        f"{event_type.topic} -> {name}"
        for event_type, names in registry.routes.items()
        for name in names
        if event_type not in consumers.get(name, {})
    ]
    if missing:
        raise RuntimeError(f"outbox routes without a handler: {', '.join(missing)}")
