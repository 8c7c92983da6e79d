"""The ASGI application: /graphql (HTTP + WebSocket, GraphiQL), /healthz, /readyz, /metrics,
/exports/<id> (data export downloads), and with MEDIA_STORAGE=local /uploads/<key> and
/media/<path> (app/media_routes.py)."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL
from strawberry.types.unset import UNSET, UnsetType

from adapters.storage.local import LocalObjectStore
from app import metrics
from app.container import ApiDeps, build_api
from app.exports import export_download
from app.gc_policy import GcPolicy, start_serving, stop_serving
from app.graphiql import ASSETS_DIR, ASSETS_PATH, assets_installed, graphiql_page
from app.graphql import build_schema
from app.http_edge import edge_middleware, origin_allowed, request_labels
from app.http_refusals import RequestRefused
from app.http_view import GuardedGraphQLView
from app.media_routes import media_routes
from app.metrics import operation_label
from app.operation import RETRY_AFTER_UNAVAILABLE_S, outage_error, unavailable_error
from app.request_body import BodyGuard, BodyLimits
from app.sessions import AdmissionUnavailable, Refusal
from app.settings import Settings, get_settings
from app.worker_health import liveness
from app.ws_guards import GuardedTransportWSHandler, GuardedWSHandler
from schema.context import Context, Limits, MediaAccess, Realtime

log = logging.getLogger("roost")

#: Seconds each check of /readyz may take before it reports an error.
READY_TIMEOUT_S = 2.0


class AuthorizationSchemeError(Exception):
    """An ``Authorization`` value that is not ``Bearer <token>``; the message says why."""


def _bearer(authorization: str | None) -> str | None:
    """The token of ``Bearer <token>`` (RFC 6750; the scheme matched case-insensitively),
    None without a header. Raises :class:`AuthorizationSchemeError` for another scheme
    (``Token x``, ``Basic …``), a bare token or ``Bearer`` with nothing after it."""
    if authorization is None or not authorization.strip():
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() == "bearer":
        if token.strip():
            return token.strip()
        raise AuthorizationSchemeError("The Authorization header has no token after 'Bearer'.")
    if not token:
        raise AuthorizationSchemeError(
            "The Authorization header holds a bare token: send 'Authorization: Bearer <token>'."
        )
    raise AuthorizationSchemeError(
        f"The Authorization scheme {scheme[:20]!r} is not supported: send"
        " 'Authorization: Bearer <accessToken>'."
    )


#: What a connection_init without credentials is told.
INIT_CREDENTIALS = (
    "Send 'authorization: Bearer <accessToken>' in connection_init"
    " (or headers.Authorization, authToken)."
)


def _init_token(params: dict[str, Any] | None) -> str | None:
    """The access token of a connection_init payload: ``authorization`` (any case, also
    inside ``headers``) as ``Bearer <token>``, or ``authToken`` (bare or ``Bearer``). None
    without any; :class:`AuthorizationSchemeError` for a non-string or another scheme."""
    if not isinstance(params, dict):
        return None
    headers = next((v for k, v in params.items() if k.lower() == "headers"), None)
    places = [params, headers] if isinstance(headers, dict) else [params]
    for place in places:
        for key, value in place.items():
            if key.lower() != "authorization":
                continue
            if not isinstance(value, str):
                raise AuthorizationSchemeError(
                    f"connection_init's {key!r} must be a string: 'Bearer <accessToken>'."
                )
            return _bearer(value)
    for key, value in params.items():
        if key.lower() == "authtoken":
            if not isinstance(value, str) or not value.strip():
                raise AuthorizationSchemeError(
                    f"connection_init's {key!r} must be the access token, a string."
                )
            scheme, _, rest = value.strip().partition(" ")
            return rest.strip() if scheme.lower() == "bearer" and rest.strip() else value.strip()
    return None


class RoostGraphQL(BodyGuard, GuardedGraphQLView, GraphQL[Context, None]):
    """Strawberry's ASGI view with Roost's typed context; WebSockets authenticate in
    their connection_init (:meth:`on_ws_connect`), then app/ws_guards.py guards them."""

    graphql_transport_ws_handler_class = GuardedTransportWSHandler
    graphql_ws_handler_class = GuardedWSHandler

    def __init__(self, schema, *, settings: Settings, deps: ApiDeps) -> None:
        super().__init__(
            schema,
            graphql_ide="graphiql" if settings.graphiql_on else None,
            subscription_protocols=[GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL],
            max_subscriptions_per_connection=settings.max_subscriptions_per_socket,
        )
        self.body_limits = BodyLimits(settings.max_request_bytes, settings.max_json_depth)
        self._origin_allowed = origin_allowed(settings.cors_origins)
        self.engine = deps.services.engine
        self.tokens = settings.token_config
        self.limits = Limits(
            counter_shards=settings.counter_shards,
            max_page_size=settings.max_page_size,
            post_edit_window_s=settings.post_edit_window_s,
        )
        self.feed_config = settings.feed_config
        self.stores = deps.stores
        self.reads = deps.reads
        self.search = settings.search_config
        self.ranked_snapshots = deps.ranked_snapshots
        self.dispatcher = deps.services.dispatcher
        self.accounts = settings.accounts_config
        self.mail = settings.mail_config
        self.media = (
            MediaAccess(deps.services.object_store, settings.media_config)
            if deps.services.object_store is not None
            else None
        )
        self.guards = deps.guards  # app/http_guards.py
        self.realtime = (
            Realtime(
                hub=deps.hub,
                publisher=deps.services.publisher,
                reads=deps.engagement_reads,
                publish_engagement=settings.realtime_engagement == "api",
                unavailable=outage_error,
            )
            if deps.hub is not None
            and deps.services.publisher is not None
            and deps.engagement_reads is not None
            else None
        )
        self.sessions = deps.sessions
        self.doorkeeper = deps.doorkeeper  # app/sessions.py
        self._ide_password = settings.dev_password if settings.env != "production" else None

    async def render_graphql_ide(self, request: Any) -> Response:
        """Roost's GraphiQL page (app/graphiql): assets served by Roost, the sample query."""
        return HTMLResponse(graphiql_page(self._ide_password))

    def is_websocket_origin_allowed(self, request: Any, origin: str) -> bool:
        """Whether a cross-origin WebSocket's ``Origin`` is allowed (else Strawberry's 403)."""
        return self._origin_allowed(origin)

    async def get_context(self, request: Any, response: Any = None) -> Context:
        try:
            bearer = _bearer(request.headers.get("authorization"))
        except AuthorizationSchemeError as exc:
            if request.scope["type"] != "http":
                bearer = None  # a socket authenticates in its connection_init
            else:
                raise RequestRefused.error(
                    str(exc),
                    "UNAUTHENTICATED",
                    401,
                    headers={"WWW-Authenticate": 'Bearer error="invalid_request"'},
                ) from None
        ctx = Context(
            engine=self.engine,
            tokens=self.tokens,
            limits=self.limits,
            feed_config=self.feed_config,
            stores=self.stores,
            dispatcher=self.dispatcher,
            realtime=self.realtime,
            sessions=self.sessions,
            search=self.search,
            ranked_snapshots=self.ranked_snapshots,
            reads=self.reads,
            accounts=self.accounts,
            mail=self.mail,
            media=self.media,
            bearer=bearer,
            request=request,
            response=response,
        )
        return ctx  # the bearer is admitted per operation (app/http_view, app/ws_guards)

    async def on_ws_connect(self, context: Context) -> UnsetType:
        """Accept a WebSocket only with a valid access token in its connection_init
        (:func:`_init_token`), its operations then run as that user; else refuse it saying
        why (graphql-transport-ws: close 4403, the message as reason; graphql-ws:
        ``connection_error`` with ``{message, code}``)."""
        try:
            token = _init_token(context.connection_params)
        except AuthorizationSchemeError as exc:
            raise self._refuse(context, {"message": str(exc), "code": "UNAUTHENTICATED"}) from None
        if token is None:
            raise self._refuse(context, {"message": INIT_CREDENTIALS, "code": "UNAUTHENTICATED"})
        try:
            claims = await self.doorkeeper.admit(token)  # app/sessions.py
        except AdmissionUnavailable as exc:
            message, extensions = unavailable_error(exc.dependency)
            raise self._refuse(context, {"message": message, **extensions}) from None
        if isinstance(claims, Refusal):
            raise self._refuse(context, {"message": claims.message, "code": "UNAUTHENTICATED"})
        context.bearer = token
        # Reused until expiry; the socket's guard re-checks the session (app/ws_guards.py).
        context.bearer_expires_at = claims.expires_at
        context.__dict__.pop("loaders", None)
        context.__dict__["viewer_id"] = claims.user_id
        return UNSET

    @staticmethod
    def _refuse(context: Context, payload: dict[str, Any]) -> ConnectionRejectionError:
        """The rejection of a connection_init; its message is kept on the context for
        graphql-transport-ws's close reason."""
        context.connection_refusal = str(payload["message"])
        return ConnectionRejectionError(payload)

    async def execute_single(
        self,
        request: Any,
        request_adapter: Any,
        sub_response: Response,
        context: Any,
        root_value: Any,
        request_data: Any,
    ) -> Any:
        """Run one operation (behind the HTTP guards); label the request's metrics with
        its operation and outcome, and answer 503 with ``Retry-After`` when a field
        failed because PostgreSQL or Redis is down (SERVICE_UNAVAILABLE)."""
        labels = request_labels(request)
        try:
            result = await super().execute_single(
                request=request,
                request_adapter=request_adapter,
                sub_response=sub_response,
                context=context,
                root_value=root_value,
                request_data=request_data,
            )
        finally:
            if labels is not None:
                labels.operation = operation_label(
                    request_data.operation_name, request_data.query, self.guards.config.max_tokens
                )
        outcome = "ok"
        # An incremental result (@defer/@stream): the initial payload's errors.
        first = getattr(result, "initial_result", result)
        for error in first.errors or ():
            extensions = error.extensions or {}
            code = extensions.get("code")
            if code == "SERVICE_UNAVAILABLE":
                outcome = "unavailable"
                metrics.UNAVAILABLE.labels(extensions.get("dependency", "unknown")).inc()
                break
            outcome = "internal_error" if code == "INTERNAL_SERVER_ERROR" else "error"
        if labels is not None:
            labels.outcome = outcome
        if outcome == "unavailable":
            sub_response.status_code = 503
            sub_response.headers["Retry-After"] = str(RETRY_AFTER_UNAVAILABLE_S)
        return result


def create_app(settings: Settings | None = None, *, engine: AsyncEngine | None = None) -> Starlette:
    """The Starlette app; ``engine`` (tests) replaces the one built from DATABASE_URL."""
    settings = settings or get_settings()
    deps = build_api(settings, engine=engine)
    services = deps.services
    engine, redis, feed_redis = services.engine, services.redis, services.feed_redis
    hub, reads = deps.hub, deps.reads
    graphql_app = RoostGraphQL(build_schema(settings), settings=settings, deps=deps)
    metrics.install()
    if not assets_installed():
        log.warning(
            "GraphiQL's assets are not installed: the page loads them from unpkg.com"
            " (needs the internet); `make graphiql` installs them"
        )

    async def healthz(_: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(_: Request) -> Response:
        """``{"postgres": "ok" | "error: …", "redis": …, "worker": …}``, 200 when
        PostgreSQL and Redis are ok, else 503 (the worker is reported, not required);
        each check gives up after READY_TIMEOUT_S."""
        checks: dict[str, str] = {}

        async def postgres() -> None:
            # A connection the server dropped (a restart) is found on use: the pool is
            # invalidated then, and one more try gets a fresh connection.
            for attempt in (1, 2):
                try:
                    async with engine.connect() as conn:
                        await conn.execute(text("SELECT 1"))
                    return
                except DBAPIError as exc:
                    if attempt == 2 or not exc.connection_invalidated:
                        raise

        redis_ping = redis.ping if redis is not None else None
        for name, check in (("postgres", postgres), ("redis", redis_ping)):
            if check is None:
                continue
            try:
                async with asyncio.timeout(READY_TIMEOUT_S):
                    await check()
                checks[name] = "ok"
            except Exception as exc:  # readiness reports, never raises
                checks[name] = f"error: {type(exc).__name__}"
        ok = all(v == "ok" for v in checks.values())
        if redis is not None:
            try:
                async with asyncio.timeout(READY_TIMEOUT_S):
                    alive = await liveness(
                        redis, settings.arq_queue, settings.worker_heartbeat_max_age_s
                    )
                checks["worker"] = f"{'ok' if alive.ok else 'down'}: {alive.message}"
            except Exception as exc:  # readiness reports, never raises
                checks["worker"] = f"error: {type(exc).__name__}"
        if services.clustered and feed_redis is not None:
            # Reported, not required: a master down costs its users' feeds a PostgreSQL
            # read, not the process its traffic.
            health = await feed_redis.node_health()
            down = sum(v != "ok" for v in health.values())
            checks["feed_redis"] = (
                f"degraded: {down} of {len(health)} masters down" if down else "ok"
            )
        if reads is not None:  # reported: without replicas, reads go to the primary
            checks.update({f"replica {k}": v for k, v in reads.status().items()})
        return JSONResponse(checks, status_code=200 if ok else 503)

    async def metrics_page(request: Request) -> Response:
        """The API's series on the API port, only with ``Authorization: Bearer
        <METRICS_TOKEN>`` (404 when no token is configured: they are on METRICS_PORT)."""
        token = settings.metrics_token
        if not token:
            return PlainTextResponse("Not Found", status_code=404)
        sent = request.headers.get("authorization", "")
        if not hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
            return PlainTextResponse(
                "Unauthorized", status_code=401, headers={"WWW-Authenticate": "Bearer"}
            )
        return Response(generate_latest(metrics.API_REGISTRY), media_type=CONTENT_TYPE_LATEST)

    def read_subscriptions() -> int:
        return hub.subscriber_count if hub is not None else 0

    def read_channels() -> int:
        return hub.channel_count if hub is not None else 0

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette):
        gc_task = gc_before = None
        if settings.gc_freeze:
            gc_before = start_serving()  # app/gc_policy.py
            if hub is not None:  # no multi-second pauses with many sockets
                gc_task = asyncio.create_task(GcPolicy(hub).run(), name="gc-policy")
        metrics.POOLS.add(engine)
        if hub is not None:
            metrics.REALTIME_SUBSCRIPTIONS.read = read_subscriptions
            metrics.REALTIME_CHANNELS.read = read_channels
        lag_task = asyncio.create_task(metrics.watch_loop_lag(), name="loop-lag")
        stop_metrics = metrics.serve(
            metrics.API_REGISTRY, settings.metrics_host, settings.metrics_port
        )
        log.info("API process %d started", os.getpid())
        yield
        lag_task.cancel()
        if stop_metrics is not None:
            await asyncio.to_thread(stop_metrics)
        metrics.POOLS.remove(engine)
        if metrics.REALTIME_SUBSCRIPTIONS.read is read_subscriptions:
            metrics.REALTIME_SUBSCRIPTIONS.read = metrics.REALTIME_CHANNELS.read = None
        if gc_task is not None:
            gc_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await gc_task
        if gc_before is not None:
            stop_serving(gc_before)
        await services.aclose()  # the hub, guards, replicas, dispatcher, Redis, engine

    app = Starlette(
        routes=[
            # every method reaches the view: one it does not serve is a JSON 405
            Route("/graphql", graphql_app),
            WebSocketRoute("/graphql", graphql_app),
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            Route("/metrics", metrics_page),
            Mount(ASSETS_PATH, StaticFiles(directory=ASSETS_DIR, check_dir=False)),
            Route("/exports/{export_id}", export_download(engine, settings), methods=["GET"]),
            *(
                media_routes(
                    services.object_store, idle_timeout_s=settings.media_upload_idle_timeout_s
                )
                if isinstance(services.object_store, LocalObjectStore)
                else ()
            ),
        ],
        middleware=edge_middleware(settings),
        lifespan=lifespan,
    )
    app.state.engine = engine
    app.state.settings = settings
    app.state.realtime = graphql_app.realtime
    app.state.reads = reads
    return app
