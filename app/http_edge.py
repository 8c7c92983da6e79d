"""What every HTTP response goes through on its way out, in one ASGI layer
(docs/api/http.md "HTTP"): a request id (:data:`REQUEST_ID`), the request's metrics
(labels filled by the view in ``scope["roost.metrics"]``), gzip when asked, and CORS
when ``CORS_ALLOW_ORIGINS`` is set (:func:`origin_allowed`, also for WebSocket
handshakes)."""

from __future__ import annotations

import contextvars
import re
import time
import zlib
from collections.abc import Callable
from random import getrandbits
from typing import Any

from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
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
    "ETag",
    "Content-Range",
    "Accept-Ranges",
    "Content-Length",
]
#: Request headers a browser may send cross-origin.
ALLOWED_HEADERS = [
    "Authorization",
    "Content-Type",
    "Idempotency-Key",
    "X-Request-ID",
    "Accept",
    "Range",
    # What Apollo and other GraphQL clients send
    "apollographql-client-name",
    "apollographql-client-version",
    "apollo-require-preflight",
    "x-apollo-operation-name",
    "graphql-client-name",
    "graphql-client-version",
]


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
    """The ASGI middleware of this module."""

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
            request_id = f"{getrandbits(128):032x}"  # a log correlation id, not a secret
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

        started = time.perf_counter()
        try:
            if wants_gzip:
                await self.app(scope, receive, _Gzip(send_with_id))
            else:
                await self.app(scope, receive, send_with_id)
        finally:
            REQUEST_ID.reset(token)
            if labels is not None and (labels.operation is not None or status >= 400):
                metrics.observe_request(
                    labels.operation or "unknown",
                    labels.outcome or _outcome_of_status(status),
                    time.perf_counter() - started,
                )


class _Gzip:
    """A ``send`` that gzips a body of at least GZIP_MIN_BYTES, not already encoded, of
    a compressible type: whole in one call, streamed chunk by chunk."""

    __slots__ = ("compressor", "send", "start")

    def __init__(self, send: Send) -> None:
        self.send = send
        self.start: Message | None = None
        self.compressor: Any = None

    async def __call__(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self.start = message
            return
        if kind != "http.response.body" or self.start is None:
            if self.compressor is not None and kind == "http.response.body":
                await self._stream(message)
                return
            await self.send(message)
            return
        start, self.start = self.start, None
        body = message.get("body", b"")
        more = message.get("more_body", False)
        if (not more and len(body) < GZIP_MIN_BYTES) or not _compressible(start):
            await self.send(start)
            await self.send(message)
            return
        headers = MutableHeaders(raw=list(start["headers"]))
        headers["Content-Encoding"] = "gzip"
        headers.add_vary_header("Accept-Encoding")
        if not more:
            data = zlib.compress(body, GZIP_LEVEL, wbits=31)
            headers["Content-Length"] = str(len(data))
            await self.send({**start, "headers": headers.raw})
            await self.send({"type": "http.response.body", "body": data})
            return
        del headers["Content-Length"]
        self.compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)
        await self.send({**start, "headers": headers.raw})
        await self._stream(message)

    async def _stream(self, message: Message) -> None:
        data = self.compressor.compress(message.get("body", b""))
        more = message.get("more_body", False)
        if not more:
            data += self.compressor.flush()
        elif data:
            data += self.compressor.flush(zlib.Z_SYNC_FLUSH)
        await self.send({"type": "http.response.body", "body": data, "more_body": more})


def _compressible(start: Message) -> bool:
    for name, value in start.get("headers", ()):
        # Ranges count bytes of the identity body (media: app/media_routes.py).
        if name in (b"content-encoding", b"accept-ranges", b"content-range"):
            return False
        if name == b"content-type" and value.split(b";")[0].strip() in _INCOMPRESSIBLE:
            return False
    return True


#: Types already compressed (or streamed events), left as they are.
_INCOMPRESSIBLE = frozenset(
    {
        b"image/png",
        b"image/jpeg",
        b"image/gif",
        b"image/webp",
        b"image/avif",
        b"image/heic",
        b"video/mp4",
        b"video/quicktime",
        b"application/gzip",
        b"application/zip",
        b"text/event-stream",
        b"font/woff2",
    }
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
    """The middleware stack, outermost first: CORS (with an allow-list), :class:`HttpEdge`."""
    stack: list[Middleware] = []
    origins = settings.cors_origins
    if origins:
        stack.append(
            Middleware(
                Cors,
                allow_origins=[o for o in origins if "*" not in o or o == "*"],
                allow_origin_regex=_wildcards(origins),
                allow_methods=["GET", "HEAD", "POST", "PUT", "OPTIONS"],
                allow_headers=[*ALLOWED_HEADERS, *settings.cors_extra_headers],
                expose_headers=EXPOSED_HEADERS,
                max_age=settings.cors_max_age_s,
            )
        )
    stack.append(Middleware(HttpEdge))
    return stack


def origin_allowed(origins: list[str]) -> Callable[[str], bool]:
    """Whether an ``Origin`` is on ``origins`` (exact, ``*``, or with a ``*`` inside), as
    the CORS layer decides it."""
    if "*" in origins:
        return lambda origin: True
    exact = frozenset(o for o in origins if "*" not in o)
    wildcards = _wildcards(origins)
    pattern = re.compile(wildcards) if wildcards else None
    return lambda origin: (
        origin in exact or (pattern is not None and pattern.fullmatch(origin) is not None)
    )


def _wildcards(origins: list[str]) -> str | None:
    """A regex of the entries with a ``*`` inside (``http://localhost:*``); None without."""
    patterns = [re.escape(o).replace(r"\*", "[^/]*") for o in origins if "*" in o and o != "*"]
    return "|".join(patterns) if patterns else None


def request_labels(request: Any) -> RequestMetrics | None:
    """The metrics labels :class:`HttpEdge` set on ``request``, if any."""
    return request.scope.get("roost.metrics")
