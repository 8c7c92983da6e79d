"""What a client sends is read through here before anything parses it: HTTP bodies and
query strings, and WebSocket messages of both protocols (docs/api/limits.md "HTTP
guards", What a client sends). At most ``MAX_REQUEST_BYTES`` are read (413/414
``REQUEST_TOO_LARGE``; a WebSocket closes with 1009); JSON must be UTF-8 and nest at
most ``MAX_JSON_DEPTH`` levels (else 400 ``BAD_REQUEST``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import orjson
from cross_web import HTTPException
from starlette.types import Message, Receive, Scope, Send
from starlette.websockets import WebSocketDisconnect, WebSocketState
from strawberry.asgi import ASGIWebSocketAdapter
from strawberry.http.exceptions import NonJsonMessageReceived, NonTextMessageReceived

from app.http_refusals import RequestRefused

#: Close code of a WebSocket whose message passes the limit (RFC 6455 "Message Too Big").
MESSAGE_TOO_BIG = 1009
TOO_LARGE = "REQUEST_TOO_LARGE"


@dataclass(frozen=True, slots=True)
class BodyLimits:
    """``max_bytes``: largest body, query string or WebSocket message; ``max_depth``:
    deepest nesting of JSON arrays and objects."""

    max_bytes: int
    max_depth: int


class JsonRefused(json.JSONDecodeError):
    """JSON refused (not UTF-8, too deep); a ``JSONDecodeError``, so Strawberry's socket
    handlers treat it as a message that is not JSON. ``reason`` is told to the client."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, "", 0)
        self.reason = reason


def too_large_message(limits: BodyLimits, what: str = "request body") -> str:
    return f"The {what} is larger than the limit of {limits.max_bytes} bytes."


def decode_json(data: str | bytes, limits: BodyLimits) -> Any:
    """``data`` decoded within the nesting limit (its size is bounded as it is read).
    Raises :class:`JsonRefused` (not UTF-8, too deep) or ``json.JSONDecodeError``."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if isinstance(data, bytes | bytearray | memoryview):
            try:
                bytes(data).decode("utf-8")
            except UnicodeDecodeError:
                raise JsonRefused("The request body is not valid UTF-8.") from None
        if "depth limit" in str(exc):
            raise JsonRefused(_too_deep(limits)) from None
        if "surrogate" in str(exc):
            raise JsonRefused("The JSON text holds a lone UTF-16 surrogate.") from None
        raise
    if _deeper_than(data, value, limits.max_depth):
        raise JsonRefused(_too_deep(limits))
    return value


def _too_deep(limits: BodyLimits) -> str:
    return f"The JSON nests arrays and objects deeper than {limits.max_depth} levels."


def _deeper_than(data: str | bytes, value: Any, limit: int) -> bool:
    """Whether ``value`` nests containers deeper than ``limit``; a ``data`` with at most
    ``limit`` brackets cannot (two C-speed counts spare the walk for ordinary requests)."""
    if isinstance(data, str):
        brackets = data.count("[") + data.count("{")
    else:
        brackets = data.count(b"[") + data.count(b"{")
    if brackets <= limit:
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def parse_json(data: str | bytes, limits: BodyLimits) -> Any:
    """:func:`decode_json` for HTTP: a refusal is an ``HTTPException`` 400 saying why."""
    try:
        return decode_json(data, limits)
    except JsonRefused as exc:
        raise HTTPException(400, exc.reason) from None
    except json.JSONDecodeError:
        raise HTTPException(400, "Unable to parse request body as JSON") from None


def refuse_early(scope: Scope, limits: BodyLimits) -> RequestRefused | None:
    """The refusal of an HTTP request whose query string or declared ``Content-Length``
    passes the limit (nothing of the body read), else None."""
    if len(scope.get("query_string", b"")) > limits.max_bytes:
        return RequestRefused.error(too_large_message(limits, "query string"), TOO_LARGE, 414)
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                declared = int(value)
            except ValueError:
                return None  # the server refuses a malformed length itself
            if declared > limits.max_bytes:
                return RequestRefused.error(too_large_message(limits), TOO_LARGE, 413)
    return None


def limited_receive(receive: Receive, limits: BodyLimits) -> Receive:
    """``receive`` counting body bytes: past ``max_bytes`` (a chunked body, or one longer
    than it declared) it raises :class:`RequestRefused` (413), so no more is read."""
    seen = 0

    async def counted() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limits.max_bytes:
                raise RequestRefused.error(too_large_message(limits), TOO_LARGE, 413)
        return message

    return counted


class LimitedWebSocketAdapter(ASGIWebSocketAdapter):
    """Strawberry's WebSocket adapter decoding by :func:`decode_json`: past ``max_bytes``
    the socket closes with 1009; too deep is not JSON to Strawberry (graphql-transport-ws:
    close 4400; graphql-ws: ignored)."""

    async def iter_json(self, *, ignore_parsing_errors: bool = False) -> Any:
        limits: BodyLimits = self.view.body_limits  # type: ignore[attr-defined]
        async for message in _messages(self, limits, ignore_parsing_errors):
            yield message


async def _messages(adapter: Any, limits: BodyLimits, ignore_parsing_errors: bool) -> Any:
    ws = adapter.ws
    try:
        while ws.application_state != WebSocketState.DISCONNECTED:
            text = await ws.receive_text()
            if _utf8_longer_than(text, limits.max_bytes):
                await ws.close(
                    code=MESSAGE_TOO_BIG, reason=f"Message too big: limit {limits.max_bytes} B"
                )
                return
            try:
                yield decode_json(text, limits)
            except json.JSONDecodeError as exc:
                if not ignore_parsing_errors:
                    raise NonJsonMessageReceived from exc
    except KeyError as exc:  # a binary frame
        raise NonTextMessageReceived from exc
    except WebSocketDisconnect:
        return


def _utf8_longer_than(text: str, limit: int) -> bool:
    """Whether ``text`` takes more than ``limit`` bytes in UTF-8 (encoded only if need be)."""
    if len(text) > limit:
        return True
    return len(text) * 4 > limit and len(text.encode("utf-8", "surrogatepass")) > limit


class BodyGuard:
    """Mixin for the GraphQL view (before Strawberry's in the bases): every HTTP request
    and WebSocket message goes through this module. The view sets ``body_limits``."""

    body_limits: BodyLimits
    websocket_adapter_class: Any = LimitedWebSocketAdapter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = refuse_early(scope, self.body_limits)
            if refusal is not None:
                await refusal.response(scope, receive, send)
                return
            receive = limited_receive(receive, self.body_limits)
        await super().__call__(scope, receive, send)  # type: ignore[misc]

    def parse_json(self, data: str | bytes) -> Any:
        return parse_json(data, self.body_limits)

    def decode_json(self, data: str | bytes) -> Any:
        return decode_json(data, self.body_limits)

    def parse_query_params(self, params: Any) -> dict[str, Any]:
        """A GET's parameters, ``variables`` and ``extensions`` decoded under the body's
        limits; one that is not JSON is a 400 naming the parameter."""
        parsed = dict(params)
        for name in ("variables", "extensions"):
            text = parsed.get(name)
            if not text:
                continue
            try:
                parsed[name] = decode_json(text, self.body_limits)
            except JsonRefused as exc:
                raise HTTPException(400, exc.reason) from None
            except json.JSONDecodeError:
                raise HTTPException(400, f"The `{name}` query parameter is not JSON.") from None
        return parsed
