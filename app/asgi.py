"""The ASGI application: /graphql (HTTP + WebSocket, GraphiQL), /healthz, /readyz, /metrics."""

from __future__ import annotations

import contextlib
import logging
from typing import Any

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
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL

from app.database import create_engine
from app.graphql import build_schema
from app.http_guards import GuardedGraphQLView, HttpGuards
from app.jobs import ArqDispatcher
from app.settings import Settings, get_settings
from domain.feed.activity import record_activity
from domain.feed.config import FeedStores
from domain.metrics import DEAD_LETTERS_OPEN, OUTBOX_BACKLOG
from domain.outbox.process import outbox_health
from schema.context import Context, Limits

log = logging.getLogger("roost")


def _bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else authorization


class RoostGraphQL(GuardedGraphQLView, GraphQL):
    """Strawberry's ASGI view with Roost's typed context."""

    def __init__(
        self,
        schema,
        *,
        engine: AsyncEngine,
        settings: Settings,
        redis: Redis | None,
        dispatcher: ArqDispatcher | None,
    ) -> None:
        super().__init__(
            schema,
            graphql_ide="graphiql",
            subscription_protocols=[GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL],
        )
        self.engine = engine
        self.tokens = settings.token_config
        self.limits = Limits(
            counter_shards=settings.counter_shards, max_page_size=settings.max_page_size
        )
        self.feed_config = settings.feed_config
        self.redis = redis
        self.stores = FeedStores.on(redis, self.feed_config) if redis is not None else None
        self.dispatcher = dispatcher
        self.guards = HttpGuards.from_settings(settings)  # app/http_guards.py

    async def get_context(self, request: Any, response: Any = None) -> Context:
        ctx = Context(
            engine=self.engine,
            tokens=self.tokens,
            limits=self.limits,
            feed_config=self.feed_config,
            stores=self.stores,
            dispatcher=self.dispatcher,
            bearer=_bearer(request.headers.get("authorization")),
            request=request,
            response=response,
        )
        await self._note_activity(ctx)
        return ctx

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
    dispatcher = (
        ArqDispatcher(settings.redis_url, settings.arq_queue) if settings.redis_url else None
    )
    graphql_app = RoostGraphQL(
        build_schema(settings),
        engine=engine,
        settings=settings,
        redis=redis,
        dispatcher=dispatcher,
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
        ok = all(v == "ok" for v in checks.values())
        return JSONResponse(checks, status_code=200 if ok else 503)

    async def metrics(_: Request) -> Response:
        try:
            backlog, dead = await outbox_health(engine)
            OUTBOX_BACKLOG.set(backlog)
            DEAD_LETTERS_OPEN.set(dead)
        except DBAPIError:
            log.warning("metrics: PostgreSQL unavailable", exc_info=True)
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette):
        yield
        await graphql_app.guards.aclose()
        if dispatcher is not None:
            await dispatcher.close()
        if redis is not None:
            await redis.aclose()
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
    return app
