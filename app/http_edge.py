"""What every HTTP response goes through on its way out, in one ASGI layer (each layer
costs CPU on every request): a request id, the request's metrics, gzip when the client
asks for it; plus CORS when an allow-list is configured.

- **Request id**: ``X-Request-ID`` from the client when it is a sane token (1-128 of
  ``A-Z a-z 0-9 . _ : -``), else a new random one; echoed in the response and kept in
  :data:`REQUEST_ID` for the logs (a masked internal error is logged with it).
- **Metrics** of ``/graphql`` over HTTP: ``roost_graphql_request_duration_seconds
  {operation, outcome}`` (app/metrics.py). The view fills the labels in
  ``scope["roost.metrics"]`` (:class:`RequestMetrics`); a request refused before it ran
  gets its outcome from the status code.
- **gzip** (Starlette's compressor) for responses of at least :data:`GZIP_MIN_BYTES`
  when ``Accept-Encoding`` has ``gzip``; other requests pay nothing for it.
- **CORS** (Starlette's middleware, only when ``CORS_ALLOW_ORIGINS`` is set): a
  successful preflight answers ``204 No Content``.
"""

from __future__ import annotations

import contextvars
import re
import time
import uuid
from typing import Any

from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES, GZipResponder
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import metrics
from app.settings import Settings

#: The request id of the request being served ("-" outside one), for log lines.
REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("roost_request_id", default="-")

#: Responses smaller than this are sent as they are.
GZIP_MIN_BYTES = 1_000
#: zlib level: 5 compresses a feed page to within a few % of 9 for half the CPU.
GZIP_LEVEL = 5

_SANE_ID = re.compile(rb"[A-Za-z0-9._:-]{1,128}")
_GRAPHQL_PATH = "/graphql"

#: Headers a browser script may read from Roost's responses.
EXPOSED_HEADERS = [
    "X-Request-ID",
    "Retry-After",
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "RateLimit-Policy",
    "Idempotent-Replayed",
]
#: Request headers a browser may send cross-origin.
ALLOWED_HEADERS = ["Authorization", "Content-Type", "Idempotency-Key", "X-Request-ID", "Accept"]


class RequestMetrics:
    """The labels of one request's metrics, filled by the GraphQL view."""

    __slots__ = ("operation", "outcome")

    def __init__(self) -> None:
        self.operation: str | None = None
        self.outcome: str | None = None


def _outcome_of_status(status: int) -> str:
    if status == 429:
        return "rate_limited"
    if status == 503:
        return "unavailable"
    if status >= 500:
        return "internal_error"
    if status >= 400:
        return "rejected"
    return "ok"


class HttpEdge:
    """The ASGI middleware of this module (see there)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = None
        wants_gzip = False
        for name, value in scope["headers"]:
            if name == b"x-request-id" and _SANE_ID.fullmatch(value):
                request_id = value.decode("ascii")
            elif name == b"accept-encoding" and b"gzip" in value:
                wants_gzip = True
        if request_id is None:
            request_id = uuid.uuid4().hex
        token = REQUEST_ID.set(request_id)
        header = (b"x-request-id", request_id.encode("ascii"))
        graphql = scope["path"] == _GRAPHQL_PATH
        labels = RequestMetrics() if graphql else None
        if labels is not None:
            scope["roost.metrics"] = labels
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), header]
            await send(message)

        app = self.app
        if wants_gzip:
            app = GZipResponder(
                self.app,
                GZIP_MIN_BYTES,
                compresslevel=GZIP_LEVEL,
                exclude_content_types=DEFAULT_EXCLUDED_CONTENT_TYPES,
            )
        started = time.perf_counter()
        try:
            await app(scope, receive, send_with_id)
        finally:
            REQUEST_ID.reset(token)
            if labels is not None and (labels.operation is not None or status >= 400):
                metrics.observe_request(
                    labels.operation or "unknown",
                    labels.outcome or _outcome_of_status(status),
                    time.perf_counter() - started,
                )


class Cors(CORSMiddleware):
    """Starlette's CORS middleware with ``204 No Content`` for a successful preflight."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code != 200:
            return response
        headers = {
            k: v
            for k, v in response.headers.items()
            if k.lower() not in ("content-length", "content-type")
        }
        return Response(status_code=204, headers=headers)


def edge_middleware(settings: Settings) -> list[Middleware]:
    """The middleware stack of the app, outermost first: CORS (only with an allow-list),
    then :class:`HttpEdge`."""
    stack: list[Middleware] = []
    origins = settings.cors_origins
    if origins:
        stack.append(
            Middleware(
                Cors,
                allow_origins=[o for o in origins if "*" not in o or o == "*"],
                allow_origin_regex=_wildcards(origins),
                allow_methods=["GET", "POST", "OPTIONS"],
                allow_headers=ALLOWED_HEADERS,
                expose_headers=EXPOSED_HEADERS,
                max_age=settings.cors_max_age_s,
            )
        )
    stack.append(Middleware(HttpEdge))
    return stack


def _wildcards(origins: list[str]) -> str | None:
    """A regex for allow-list entries with a ``*`` inside (``http://localhost:*``,
    ``https://*.example.com``); None when there are none."""
    patterns = [re.escape(o).replace(r"\*", "[^/]*") for o in origins if "*" in o and o != "*"]
    return "|".join(patterns) if patterns else None


def request_labels(request: Any) -> RequestMetrics | None:
    """The metrics labels of ``request`` (a Starlette request), if :class:`HttpEdge`
    set them."""
    return request.scope.get("roost.metrics")
