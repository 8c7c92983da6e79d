"""WebSocket guards, for both subscription protocols: what app/http_view.py gives HTTP
requests (docs/api/limits.md "HTTP guards", Every transport).

After ``connection_init`` admitted a socket, its :class:`SocketGuard` charges each
operation to the HTTP budgets (``RATE_LIMITED`` in an ``error`` message), refuses
variables past ``MAX_TOKENS`` and operations past ``MAX_SUBSCRIPTIONS_PER_SOCKET``
(``TOO_MANY_OPERATIONS``), and re-checks the session at most once a second and at once
on a ``session`` event: an ended session's socket closes with 4403 within a second.
Every error it sends carries an ``extensions.code``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from graphql import GraphQLError, GraphQLSyntaxError
from strawberry.http.exceptions import WebSocketDisconnected
from strawberry.schema.schema import DEFAULT_ALLOWED_OPERATION_TYPES
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
    Operation,
)
from strawberry.subscriptions.protocols.graphql_ws.handlers import BaseGraphQLWSHandler
from strawberry.types.execution import PreExecutionError

from app.document_limits import variables_within
from app.guard_rules import (
    VARIABLES_TOO_LARGE,
    ensure_code,
    operation_info,
    payload_errors,
    rate_limited_extensions,
    rate_limited_message,
)
from app.sessions import AdmissionUnavailable, Refusal
from app.ws_incremental import ResultPayloads
from domain.identity.session_store import SESSION_EVENT
from domain.identity.tokens import AccessClaims
from domain.realtime import Subscriptions, user_channel
from schema.context import Context

log = logging.getLogger("roost.ws")

T = TypeVar("T")

#: A socket's session is re-checked at most this often (seconds) while it is used.
RECHECK_S = 1.0
#: The code of an operation refused because the socket runs MAX_SUBSCRIPTIONS_PER_SOCKET.
TOO_MANY_OPERATIONS = "TOO_MANY_OPERATIONS"
#: Close code of a socket whose session or account ended (graphql-transport-ws's
#: "Forbidden", which clients do not retry with the same token).
ENDED_CLOSE_CODE = 4403


def close_reason(message: str) -> str:
    """``message`` cut to a WebSocket close reason's 123 bytes of UTF-8 (RFC 6455)."""
    data = message.encode()
    if len(data) <= 123:
        return message
    return data[:120].decode(errors="ignore") + "..."


async def _shielded(coro: Awaitable[T]) -> T:
    """Await ``coro`` in its own shielded task (redis-py can swallow a cancellation that
    lands mid-command); the caller's cancellation still ends the caller at once."""
    task = asyncio.ensure_future(coro)
    task.add_done_callback(_consume)
    return await asyncio.shield(task)


def _consume(task: asyncio.Future) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.debug("a socket guard's call failed after its socket left", exc_info=task.exception())


class SocketGuard:
    """The guards of one authenticated socket; ``close(reason)`` closes the socket."""

    def __init__(
        self,
        view: Any,
        claims: AccessClaims,
        ip: str,
        close: Callable[[str], Awaitable[None]],
    ) -> None:
        self.view = view
        self.claims = claims
        self.ip = ip
        self._close = close
        self._checked_at = time.monotonic()  # admitted at connection_init
        self.ended = False
        self._watcher: asyncio.Task | None = None
        realtime = getattr(view, "realtime", None)
        if realtime is not None:
            self._watcher = asyncio.create_task(self._watch(realtime.hub), name="ws-session")

    def stop(self) -> None:
        """The socket is gone: stop watching its user's channel."""
        if self._watcher is not None:
            self._watcher.cancel()

    async def _watch(self, hub: Subscriptions) -> None:
        try:
            channel = user_channel(self.claims.user_id)
            async with hub.subscribe(channel, types=[SESSION_EVENT]) as sub:
                await self.recheck(force=True)  # a session that ended while subscribing
                while not self.ended:
                    await sub.get()
                    sub.pending()  # one re-check answers a burst
                    await self.recheck(force=True)
        except asyncio.CancelledError:
            raise
        except Exception:  # hub closed, Redis down: the per-use re-check remains
            log.debug("session watch of a socket ended", exc_info=True)

    async def recheck(self, *, force: bool = False) -> bool:
        """Whether the socket's session may still act (re-checked when older than
        RECHECK_S, or ``force``); when not, close the socket and return False."""
        if self.ended:
            return False
        if not force and time.monotonic() - self._checked_at < RECHECK_S:
            return True
        try:
            outcome = await _shielded(self.view.doorkeeper.recheck(self.claims))
        except AdmissionUnavailable:
            return True  # cannot tell now: the admission stands until the next check
        self._checked_at = time.monotonic()
        if isinstance(outcome, Refusal) and not self.ended:
            self.ended = True
            if asyncio.current_task() is not self._watcher:
                self.stop()
            with contextlib.suppress(Exception):
                await self._close(outcome.message)
        return not self.ended

    async def refuse_operation(self, payload: Any) -> dict[str, Any] | None:
        """Charge an operation about to start (``payload``: its ``query``,
        ``operationName``, ``variables``); return the formatted error that refuses it, or
        None to run it (also when the socket just closed: check :attr:`ended`)."""
        if not await self.recheck():
            return None
        guards = self.view.guards
        max_tokens = guards.config.max_tokens
        payload = payload if isinstance(payload, dict) else {}
        query, name = payload.get("query"), payload.get("operationName")
        info = None
        if isinstance(query, str) and query and isinstance(name, str | None):
            summary = operation_info(query, name, max_tokens)
            info = None if isinstance(summary, str) else summary
        decision = await _shielded(guards.charge(f"u:{self.claims.user_id}", self.ip, info))
        if not decision.allowed:
            return {
                "message": rate_limited_message(decision),
                "extensions": {"code": "RATE_LIMITED", **rate_limited_extensions(decision)},
            }
        if not variables_within(payload.get("variables"), max_tokens):
            return {
                "message": VARIABLES_TOO_LARGE.format(max_tokens),
                "extensions": {"code": "BAD_USER_INPUT"},
            }
        return None


def _socket_guard(handler: Any) -> SocketGuard | None:
    """The guard of a handler whose connection was just acknowledged."""
    view, context = handler.view, handler.context
    claims = view.doorkeeper.claims(context.bearer) if context.bearer else None
    if not isinstance(claims, AccessClaims):
        return None
    client = getattr(context.request, "client", None)

    async def close(reason: str) -> None:
        await handler.websocket.close(code=ENDED_CLOSE_CODE, reason=f"Forbidden: {reason}"[:120])

    return SocketGuard(view, claims, client.host if client else "unknown", close)


def malformed_operation(payload: Any, max_tokens: int) -> dict[str, Any] | None:
    """The formatted ``BAD_REQUEST`` error refusing an operation whose ``payload`` HTTP
    would refuse with a 400 (its shape, or no operation to pick); None when sound (a
    document that does not parse is Strawberry's to report)."""
    message: str | None = None
    if not isinstance(payload, dict):
        message = "The operation's payload must be an object."
    elif not isinstance(payload.get("query"), str) or not payload["query"]:
        message = "The operation's `query` must be a non-empty string."
    elif not isinstance(payload.get("variables"), dict | None):
        message = "The operation's `variables` must be an object or null, if provided."
    elif not isinstance(payload.get("extensions"), dict | None):
        message = "The operation's `extensions` must be an object or null, if provided."
    elif not isinstance(payload.get("operationName"), str | None):
        message = "The operationName must be a string or null, if provided."
    else:
        summary = operation_info(payload["query"], payload.get("operationName"), max_tokens)
        message = summary if isinstance(summary, str) else None
    if message is None:
        return None
    return {"message": message, "extensions": {"code": "BAD_REQUEST"}}


def _max_tokens(handler: Any) -> int:
    return int(handler.view.guards.config.max_tokens)


def too_many_operations(limit: int) -> dict[str, Any]:
    """The formatted error refusing an operation on a socket already running ``limit``."""
    return {
        "message": (
            f"This socket runs {limit} operations already (MAX_SUBSCRIPTIONS_PER_SOCKET):"
            " complete one, or open another socket."
        ),
        "extensions": {"code": TOO_MANY_OPERATIONS, "limit": limit},
    }


def _with_codes(payload: Any) -> Any:
    """``payload`` (a result, a later part, or an error payload) with a code per error."""
    if isinstance(payload, list):
        for error in payload:
            if isinstance(error, dict):
                ensure_code(error)
    elif isinstance(payload, dict):
        if "message" in payload:  # an error
            ensure_code(payload)
        else:
            _with_codes(payload_errors(payload))
    return payload


class GuardedTransportWSHandler(BaseGraphQLTransportWSHandler[Context, None]):
    """Strawberry's graphql-transport-ws handler with a :class:`SocketGuard`, quiet when a
    client leaves while an event is on its way (a normal end)."""

    guard: SocketGuard | None = None

    async def handle_task_exception(self, error: Exception) -> None:
        if isinstance(error, WebSocketDisconnected):
            return
        await super().handle_task_exception(error)

    async def handle_connection_init(self, message: Any) -> None:
        """Strawberry's, with a refusal's close (4403) giving its reason rather than a
        bare "Forbidden" (the message of ``RoostGraphQL.on_ws_connect``)."""
        websocket = self.websocket
        close = websocket.close

        async def close_saying_why(code: int, reason: str) -> None:
            refusal = getattr(self.context, "connection_refusal", None)
            if code == ENDED_CLOSE_CODE and refusal:
                reason = close_reason(f"Forbidden: {refusal}")
            await close(code=code, reason=reason)

        websocket.close = close_saying_why  # type: ignore[method-assign]
        try:
            await super().handle_connection_init(message)
        finally:
            del websocket.close  # the instance attribute: the class's method again
        if self.connection_acknowledged and self.guard is None:
            self.guard = _socket_guard(self)

    @staticmethod
    def _get_pre_execution_close_reason(error: GraphQLError) -> str | None:
        """A syntax error gets an ``error`` message (GRAPHQL_PARSE_FAILED) as a validation
        error does, where Strawberry would close the socket (4400) and its other
        operations; the rest as Strawberry's."""
        if isinstance(error, GraphQLSyntaxError):
            return None
        return BaseGraphQLTransportWSHandler._get_pre_execution_close_reason(error)

    async def handle_subscribe(self, message: Any) -> None:
        if not isinstance(message.get("id"), str):  # the protocol's ids are strings
            await self.websocket.close(code=4400, reason="A subscribe message needs a string id.")
            return
        if self.connection_acknowledged and message.get("id") not in self.operations:
            malformed = malformed_operation(message.get("payload"), _max_tokens(self))
            if malformed is not None:
                await self.send_message(
                    {"id": message["id"], "type": "error", "payload": [malformed]}
                )
                return
        limit = self.max_subscriptions_per_connection
        if (
            self.connection_acknowledged
            and limit is not None
            and message.get("id") not in self.operations
            and len(self.operations) >= limit
        ):
            refusal = too_many_operations(limit)
            await self.send_message({"id": message["id"], "type": "error", "payload": [refusal]})
            return
        guard = self.guard
        if guard is not None and message.get("id") not in self.operations:
            error = await guard.refuse_operation(message.get("payload"))
            if guard.ended:
                return
            if error is not None:
                await self.send_message({"id": message["id"], "type": "error", "payload": [error]})
                return
        await super().handle_subscribe(message)

    async def _send_result_stream(
        self, operation: Operation[Context, None], result_source: Any
    ) -> None:
        """Strawberry's, sending each part of an incremental result as a ``next``
        message (app/ws_incremental.py) where Strawberry refuses them."""
        payloads = ResultPayloads()
        first = True
        async for result in result_source:
            if first and isinstance(result, PreExecutionError):
                await self._handle_pre_execution_error(operation, result)
                return
            first = False
            message = {"id": operation.id, "type": "next", "payload": payloads.payload(result)}
            await operation.send_operation_message(message)  # type: ignore[arg-type]

    async def send_message(self, message: Any) -> None:
        guard = self.guard
        if guard is not None:
            if guard.ended or (message.get("type") == "next" and not await guard.recheck()):
                return
        if message.get("type") in ("next", "error"):
            _with_codes(message.get("payload"))
        await super().send_message(message)

    async def shutdown(self) -> None:
        if self.guard is not None:
            self.guard.stop()
        await super().shutdown()


#: graphql-transport-ws's close reason for a second connection_init (code 4429).
TOO_MANY_INITS = "Too many initialisation requests"


class GuardedWSHandler(BaseGraphQLWSHandler[Context, None]):
    """Strawberry's legacy graphql-ws handler with a :class:`SocketGuard`."""

    guard: SocketGuard | None = None

    async def handle_connection_init(self, message: Any) -> None:
        """Strawberry's, once: a second connection_init (which would sign the socket in
        as another account behind the first one's guard) is refused as
        graphql-transport-ws refuses it, ``connection_error`` then close 4429."""
        if self.connection_acknowledged:
            await self.send_message(
                {"type": "connection_error", "payload": {"message": TOO_MANY_INITS}}
            )
            await self.websocket.close(code=4429, reason=TOO_MANY_INITS)
            return
        await super().handle_connection_init(message)
        if self.connection_acknowledged and self.guard is None:
            self.guard = _socket_guard(self)

    async def handle_start(self, message: Any) -> None:
        if not isinstance(message.get("id"), str):
            malformed: dict[str, Any] | None = {
                "message": "A start message needs a string id.",
                "extensions": {"code": "BAD_REQUEST"},
            }
        else:
            malformed = malformed_operation(message.get("payload"), _max_tokens(self))
        if malformed is not None:
            await self.send_message(
                {"type": "error", "id": message.get("id"), "payload": malformed}
            )
            return
        limit = self.max_subscriptions_per_connection
        if (
            self.connection_acknowledged
            and limit is not None
            and message.get("id") not in self.tasks  # a restart replaces its operation
            and len(self.tasks) >= limit
        ):
            reply = {
                "type": "error",
                "id": message.get("id"),
                "payload": too_many_operations(limit),
            }
            await self.send_message(reply)
            return
        guard = self.guard
        if guard is not None:
            error = await guard.refuse_operation(message.get("payload"))
            if guard.ended:
                return
            if error is not None:
                reply = {"type": "error", "id": message.get("id"), "payload": error}
                await self.send_message(reply)
                return
        await super().handle_start(message)

    async def handle_async_results(
        self,
        operation_id: str,
        query: str,
        operation_name: str | None,
        variables: dict[str, object] | None,
    ) -> None:
        """Strawberry's, running queries and mutations too (as graphql-transport-ws
        does; Strawberry's runs subscriptions only), each part of an incremental result
        sent as a ``data`` message (app/ws_incremental.py)."""
        try:
            result_source = await self.schema.stream(
                query=query,
                variable_values=variables,
                operation_name=operation_name,
                context_value=self.context,
                root_value=self.root_value,
                allowed_operation_types=DEFAULT_ALLOWED_OPERATION_TYPES,
            )
            self.subscriptions[operation_id] = result_source
            payloads = ResultPayloads()
            first = True
            async for result in result_source:
                if first and isinstance(result, PreExecutionError):
                    assert result.errors
                    error = result.errors[0].formatted
                    await self.send_message({"type": "error", "id": operation_id, "payload": error})
                    return
                first = False
                data = {"type": "data", "id": operation_id, "payload": payloads.payload(result)}
                await self.send_message(data)
            await self.send_message({"type": "complete", "id": operation_id})
        except asyncio.CancelledError:
            await self.send_message({"type": "complete", "id": operation_id})
        finally:
            self.subscriptions.pop(operation_id, None)
            self.tasks.pop(operation_id, None)

    async def send_message(self, message: Any) -> None:
        guard = self.guard
        if guard is not None:
            if guard.ended or (message.get("type") == "data" and not await guard.recheck()):
                return
        if message.get("type") in ("data", "error"):
            _with_codes(message.get("payload"))
        await super().send_message(message)

    async def cleanup(self) -> None:
        if self.guard is not None:
            self.guard.stop()
        await super().cleanup()
