"""The ASGI application: /graphql (HTTP + WebSocket, GraphiQL), /healthz, /readyz, /metrics."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from typing import Any

import jwt
from graphql import GraphQLError
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route, WebSocketRoute
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.http.exceptions import WebSocketDisconnected
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
)
from strawberry.types.unset import UNSET, UnsetType

from app.database import ReadRouting, create_engine
from app.gc_policy import GcPolicy
from app.graphql import build_schema
from app.http_guards import GuardedGraphQLView, HttpGuards
from app.jobs import ArqDispatcher
from app.settings import Settings, get_settings
from domain.errors import DomainError
from domain.feed.activity import record_activity
from domain.feed.config import FeedStores
from domain.feedstore import FeedRedis
from domain.identity.tokens import decode_access_token
from domain.metrics import (
    DEAD_LETTERS_OPEN,
    OUTBOX_BACKLOG,
    REALTIME_CHANNELS,
    REALTIME_SUBSCRIPTIONS,
)
from domain.outbox.process import outbox_health
from domain.realtime import Hub, RealtimePublisher
from domain.realtime.queries import EngagementReads
from domain.search.snapshots import RankedSnapshots
from schema.context import Context, Limits, Realtime

log = logging.getLogger("roost")


def _bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else authorization


def _init_authorization(params: dict[str, Any] | None) -> str | None:
    """The ``authorization`` entry of a connection_init payload, its key matched
    case-insensitively (clients send ``Authorization`` or ``authorization``)."""
    for key, value in (params or {}).items():
        if isinstance(key, str) and key.lower() == "authorization" and isinstance(value, str):
            return value
    return None


class _TransportWSHandler(BaseGraphQLTransportWSHandler):
    """Strawberry's graphql-transport-ws handler, quiet when a client leaves while an
    event is on its way to it: a normal end, not an error worth a traceback."""

    async def handle_task_exception(self, error: Exception) -> None:
        if isinstance(error, WebSocketDisconnected):
            return
        await super().handle_task_exception(error)


class RoostGraphQL(GuardedGraphQLView, GraphQL):
    """Strawberry's ASGI view with Roost's typed context; WebSockets authenticate in
    their connection_init (:meth:`on_ws_connect`)."""

    graphql_transport_ws_handler_class = _TransportWSHandler

    def __init__(
        self,
        schema,
        *,
        engine: AsyncEngine,
        settings: Settings,
        redis: Redis | None,
        dispatcher: ArqDispatcher | None,
        realtime: Realtime | None = None,
        feed_redis: FeedRedis | None = None,
        reads: ReadRouting | None = None,
    ) -> None:
        super().__init__(
            schema,
            graphql_ide="graphiql",
            subscription_protocols=[GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL],
            max_subscriptions_per_connection=settings.max_subscriptions_per_socket,
        )
        self.engine = engine
        self.tokens = settings.token_config
        self.limits = Limits(
            counter_shards=settings.counter_shards, max_page_size=settings.max_page_size
        )
        self.feed_config = settings.feed_config
        self.redis = redis
        feed_redis = feed_redis or (FeedRedis(redis) if redis is not None else None)
        # Rebuilds read the primary: a lagging replica could miss a post whose fan-out
        # already skipped the (missing) timeline.
        self.stores = (
            FeedStores.on(feed_redis, self.feed_config, rebuild_engine=engine)
            if feed_redis
            else None
        )
        self.reads = reads
        self.search = settings.search_config
        self.ranked_snapshots = (
            RankedSnapshots(redis, self.search.snapshot_ttl) if redis is not None else None
        )
        self.dispatcher = dispatcher
        self.guards = HttpGuards.from_settings(settings)  # app/http_guards.py
        self.realtime = realtime

    async def get_context(self, request: Any, response: Any = None) -> Context:
        ctx = Context(
            engine=self.engine,
            tokens=self.tokens,
            limits=self.limits,
            feed_config=self.feed_config,
            stores=self.stores,
            dispatcher=self.dispatcher,
            realtime=self.realtime,
            search=self.search,
            ranked_snapshots=self.ranked_snapshots,
            reads=self.reads,
            bearer=_bearer(request.headers.get("authorization")),
            request=request,
            response=response,
        )
        await self._note_activity(ctx)
        return ctx

    async def on_ws_connect(self, context: Context) -> UnsetType:
        """Accept a WebSocket only with a valid access token in its connection_init
        payload, ``{"authorization": "Bearer <token>"}``: the socket's operations then
        run as that user. Otherwise refuse it (graphql-transport-ws: close 4403
        Forbidden; graphql-ws: ``connection_error`` with ``{message, code}``)."""
        token = _bearer(_init_authorization(context.connection_params))
        if token is None:
            raise ConnectionRejectionError(
                {
                    "message": "Send 'authorization: Bearer <accessToken>' in connection_init.",
                    "code": "UNAUTHENTICATED",
                }
            )
        try:
            viewer = decode_access_token(self.tokens, token)
        except DomainError as exc:
            raise ConnectionRejectionError(
                {"message": exc.message, "code": "UNAUTHENTICATED"}
            ) from None
        context.bearer = token
        # Verified once here; operations and events reuse it until the token expires.
        context.bearer_expires_at = jwt.decode(token, options={"verify_signature": False})["exp"]
        context.__dict__.pop("loaders", None)
        context.__dict__["viewer_id"] = viewer
        await self._note_activity(context)
        return UNSET

    async def _note_activity(self, ctx: Context) -> None:
        """Record the viewer as active (fan-out pushes to active followers only)."""
        if self.redis is None or self.stores is None or ctx.bearer is None:
            return
        try:
            viewer = ctx.viewer_id
        except GraphQLError:
            return  # a bad token: the resolvers report it
        try:
            await record_activity(self.engine, self.redis, self.stores, self.feed_config, viewer)
        except (RedisError, DBAPIError):
            log.warning("could not record activity of %s", viewer, exc_info=True)


def create_app(settings: Settings | None = None, *, engine: AsyncEngine | None = None) -> Starlette:
    """Return the Starlette app. ``engine`` may be passed in (tests); otherwise one is
    built from ``settings.database_url``, and disposed at shutdown."""
    settings = settings or get_settings()
    if settings.database_url is None:
        raise RuntimeError("DATABASE_URL is not set (use `roost run`, which starts one).")
    owns_engine = engine is None
    engine = engine or create_engine(
        settings.database_url,
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_max_overflow,
    )
    # Binary replies: feed members are 16-byte post ids.
    redis = Redis.from_url(settings.redis_url) if settings.redis_url else None
    # Timelines, presence and pub/sub: on REDIS_URL's Redis, or on a Redis Cluster.
    clustered = bool(settings.feed_redis_url or settings.feed_cluster_nodes)
    feed_redis = settings.open_feed_redis() if clustered else FeedRedis(redis) if redis else None
    dispatcher = (
        ArqDispatcher(settings.redis_url, settings.arq_queue) if settings.redis_url else None
    )
    # One pub/sub connection serves every subscription of this process.
    realtime = (
        Realtime(
            hub=Hub(feed_redis, presence_ttl_s=settings.realtime_presence_ttl_s),
            publisher=RealtimePublisher(feed_redis),
            reads=EngagementReads(engine),
            publish_engagement=settings.realtime_engagement == "api",
        )
        if feed_redis is not None
        else None
    )
    # Read replicas: queries read from them (schema/read_routing.py, app/database.py).
    reads = (
        ReadRouting(
            engine,
            settings.database_url,
            settings.replica_urls,
            redis,
            max_lag_s=settings.replica_max_lag_s,
            pool_size=settings.db_pool_size,
            max_overflow=settings.db_max_overflow,
        )
        if settings.replica_urls
        else None
    )
    graphql_app = RoostGraphQL(
        build_schema(settings),
        engine=engine,
        settings=settings,
        redis=redis,
        dispatcher=dispatcher,
        realtime=realtime,
        feed_redis=feed_redis,
        reads=reads,
    )

    async def healthz(_: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(_: Request) -> Response:
        checks: dict[str, str] = {}
        try:
            async with engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
            checks["postgres"] = "ok"
        except Exception as exc:  # readiness reports, never raises
            checks["postgres"] = f"error: {type(exc).__name__}"
        if redis is not None:
            try:
                await redis.ping()
                checks["redis"] = "ok"
            except Exception as exc:
                checks["redis"] = f"error: {type(exc).__name__}"
        if clustered and feed_redis is not None:
            # Reported, not required: a master down costs its users' feeds a PostgreSQL
            # read, not the process its traffic.
            health = await feed_redis.node_health()
            down = sum(v != "ok" for v in health.values())
            checks["feed_redis"] = (
                f"degraded: {down} of {len(health)} masters down" if down else "ok"
            )
        if reads is not None:  # reported: without replicas, reads go to the primary
            checks.update({f"replica {k}": v for k, v in reads.status().items()})
        ok = all(v == "ok" for k, v in checks.items() if k in ("postgres", "redis"))
        return JSONResponse(checks, status_code=200 if ok else 503)

    async def metrics(_: Request) -> Response:
        try:
            backlog, dead = await outbox_health(engine)
            OUTBOX_BACKLOG.set(backlog)
            DEAD_LETTERS_OPEN.set(dead)
        except DBAPIError:
            log.warning("metrics: PostgreSQL unavailable", exc_info=True)
        if realtime is not None:
            REALTIME_SUBSCRIPTIONS.set(realtime.hub.subscriber_count)
            REALTIME_CHANNELS.set(realtime.hub.channel_count)
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette):
        gc_task = None
        if realtime is not None and settings.gc_freeze:
            policy = GcPolicy(realtime.hub)  # app/gc_policy.py: no multi-second pauses
            policy.start_up()
            gc_task = asyncio.create_task(policy.run(), name="gc-policy")
        yield
        if gc_task is not None:
            gc_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await gc_task
            gc.unfreeze()
        if realtime is not None:
            await realtime.hub.close()
        await graphql_app.guards.aclose()
        if dispatcher is not None:
            await dispatcher.close()
        if redis is not None:
            await redis.aclose()
        if clustered and feed_redis is not None:
            await feed_redis.aclose()
        if reads is not None:
            await reads.aclose()
        if owns_engine:
            await engine.dispose()

    app = Starlette(
        routes=[
            Route("/graphql", graphql_app, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", graphql_app),
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            Route("/metrics", metrics),
        ],
        lifespan=lifespan,
    )
    app.state.engine = engine
    app.state.settings = settings
    app.state.realtime = realtime
    app.state.reads = reads
    return app
