"""The guarded GraphQL view over HTTP (docs/api/limits.md "HTTP guards"; every code
and status it answers is in docs/api/errors.md).

:class:`GuardedGraphQLView` is a mixin for Strawberry's ASGI view
(``class RoostGraphQL(GuardedGraphQLView, GraphQL)``). Per operation it admits the
bearer token, resolves a persisted query, refuses what may not run, charges the rate
limits and claims the ``Idempotency-Key`` of a POSTed mutation; a refused request is a
JSON GraphQL error with its HTTP status. A GET's answer carries ``Cache-Control``,
``Vary`` and an ``ETag`` (304 on a matching ``If-None-Match``); a HEAD is answered as a
GET without the body. WebSockets get the same rules from app/ws_guards.py.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import orjson
from cross_web import HTTPException
from graphql import GraphQLError
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send
from strawberry.http import GraphQLRequestData
from strawberry.types import ExecutionResult

from app.cache_policy import NO_STORE, PRIVATE, VARY, cache_control, etag, matches
from app.document_limits import variables_within
from app.guard_rules import (
    VARIABLES_TOO_LARGE,
    OperationInfo,
    ensure_code,
    operation_info,
    payload_errors,
    rate_limited_extensions,
    rate_limited_message,
)
from app.http_guards import PERSISTED, REPLAYS, HttpGuards
from app.http_refusals import RequestRefused, graphql_error_response, unavailable_refusal
from app.idempotency import (
    Claim,
    IdempotencyError,
    StoredResponse,
    fingerprint,
    parse_key,
    redis_key,
)
from app.media_types import (
    CONTENT_TYPES,
    GRAPHQL_RESPONSE_JSON,
    JSON,
    OFFERED,
    is_request_error,
    negotiate,
)
from app.persisted_queries import (
    PersistedQueryError,
    PersistedQueryRef,
    not_found,
    not_supported,
)
from app.ratelimit import Decision
from app.sessions import AdmissionUnavailable, Doorkeeper, Refusal

log = logging.getLogger("roost.http")

SUBSCRIPTIONS_OVER_WS = (
    "Subscriptions are served over WebSocket at /graphql (graphql-transport-ws or graphql-ws)."
)
#: The answer to @defer or @stream from a client that cannot read its parts.
INCREMENTAL_NEEDS_MULTIPART = (
    "This operation uses @defer or @stream: send 'Accept: multipart/mixed' to receive its"
    " parts one after another, or leave the directives out."
)
#: The answer to an anonymous mutation other than logIn/signUp/refreshSession.
SIGN_IN_FIRST = "Sign in first: send 'Authorization: Bearer <accessToken>'."


def _bodiless(response: Response, status: int) -> Response:
    """``response``'s headers without its body: a HEAD's answer (Content-Length kept), or
    ``304 Not Modified`` (RFC 9110: the validators and caching headers, no content ones)."""
    drop = ("content-length", "content-type") if status == 304 else ()
    headers = [(k, v) for k, v in response.raw_headers if k.decode().lower() not in drop]
    out = Response(status_code=status)
    out.raw_headers = headers
    return out


def _viewer(context: Any) -> uuid.UUID | None:
    """The request's signed-in user; None when anonymous or the token is bad."""
    try:
        return getattr(context, "viewer_id", None)
    except GraphQLError:
        return None


def _client_ip(request: Request) -> str:
    """The client's address as the ASGI server reports it (after FORWARDED_ALLOW_IPS)."""
    return request.client.host if request.client else "unknown"


#: Codes that tell the client to send the request again later: a response carrying one
#: is never stored for an Idempotency-Key (its replay would refuse the retry it invites).
RETRYABLE_CODES = frozenset({"SERVICE_UNAVAILABLE", "RATE_LIMITED", "TOO_MANY_OPERATIONS"})


def _executed(result: ExecutionResult) -> bool:
    """Whether execution started (data, or an error raised at a field) and ended in no
    error to retry (:data:`RETRYABLE_CODES`): only then is an idempotent response stored."""
    errors = result.errors or ()
    if any((e.extensions or {}).get("code") in RETRYABLE_CODES for e in errors):
        return False
    return result.data is not None or any(e.path for e in errors)


class GuardedGraphQLView:
    """Mixin for :class:`strawberry.asgi.GraphQL` adding the HTTP guards."""

    guards: HttpGuards
    doorkeeper: Doorkeeper

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)  # type: ignore[misc]
            return
        head = scope["method"] == "HEAD"  # answered as GET, without the body
        request = Request(scope={**scope, "method": "GET"} if head else scope, receive=receive)
        media = negotiate(request.headers.get("accept"))
        request.state.media_type = media
        try:
            response = await self.run(request)  # type: ignore[attr-defined]
        except RequestRefused as exc:
            response = exc.response
        except HTTPException as exc:
            headers = {"Allow": "GET, POST"} if exc.status_code == 405 else None
            response = graphql_error_response(
                exc.reason, "BAD_REQUEST", exc.status_code, headers=headers
            )
        except ClientDisconnect:
            log.info("client %s disconnected before its request was read", _client_ip(request))
            return
        if media == GRAPHQL_RESPONSE_JSON and response.media_type == JSON:
            response.headers["content-type"] = CONTENT_TYPES[GRAPHQL_RESPONSE_JSON]
            if (
                response.status_code == 200
                and getattr(request.state, "request_error", False)
                and not getattr(request.state, "batch", False)
            ):
                response.status_code = 400  # failed before execution: no data
        if (
            response.status_code == 200
            and getattr(request.state, "cacheable", False)
            and isinstance(getattr(response, "body", None), bytes)  # not a stream
        ):
            tag = etag(response.body)  # an operation's answer (app/cache_policy.py)
            response.headers["ETag"] = tag
            if matches(request.headers.get("if-none-match"), tag):
                response = _bodiless(response, 304)
        if head:
            response = _bodiless(response, response.status_code)
        await response(scope, receive, send)

    async def process_result(self, request: Request, result: ExecutionResult) -> Any:
        """Strawberry's JSON result, with no ``data`` entry when the request failed
        before execution (GraphQL spec, "Response": a request error), and a code on
        every error: one that has none is an unexpected fault, masked and logged."""
        payload = await super().process_result(request, result)  # type: ignore[misc]
        if is_request_error(result.data, result.errors):
            payload.pop("data", None)
            request.state.request_error = True
        for error in payload.get("errors") or ():
            ensure_code(error)
        return payload

    async def _process_stream_result(
        self, request: Request, value: Any, all_pending: list[Any]
    ) -> tuple[Any, list[Any]]:
        """Strawberry's part of a ``multipart/mixed`` answer, with a code on every error
        of a later part (Strawberry masks the first part only)."""
        part, pending = await super()._process_stream_result(  # type: ignore[misc]
            request, value, all_pending
        )
        for error in payload_errors(part):
            ensure_code(error)
        return part, pending

    def should_render_graphql_ide(self, request: Any) -> bool:
        """GraphiQL for a browser's GET without ``query``, unless it carries
        ``extensions`` (an APQ request by hash)."""
        return super().should_render_graphql_ide(request) and (  # type: ignore[misc]
            request.query_params.get("extensions") is None
        )

    async def parse_http_body(self, request: Any) -> Any:
        """Strawberry's parsing, refusing (400) a JSON body that is not an object or a
        non-string ``operationName``; a JSON POST skips Strawberry's costly parser."""
        data = await self._parse_json_post(request)
        if data is None:
            try:
                data = await super().parse_http_body(request)  # type: ignore[misc]
            except AttributeError as exc:  # ``data.get`` on a JSON scalar
                raise HTTPException(400, "The request body must be a JSON object.") from exc
        for one in data if isinstance(data, list) else (data,):
            if not isinstance(one.operation_name, str | None):
                raise HTTPException(400, "The operationName must be a string or null, if provided.")
        return data

    async def _parse_json_post(
        self, request: Any
    ) -> GraphQLRequestData | list[GraphQLRequestData] | None:
        """The request data of a JSON POST holding an object or array, checked as
        Strawberry checks it; None for any other request (Strawberry parses it)."""
        if request.method != "POST" or self._stream_transport_map:  # type: ignore[attr-defined]
            return None
        media_type = (request.content_type or "").partition(";")[0].strip().lower()
        if "application/json" not in media_type:
            return None
        data = self.parse_json(await request.get_body())  # type: ignore[attr-defined]
        if isinstance(data, list):
            return self._batch(data)
        if not isinstance(data, dict):
            return None  # a scalar: Strawberry's errors
        return _request_data(data)

    def _batch(self, items: list[Any]) -> list[GraphQLRequestData]:
        """The operations of an array batch, each checked as a single one; a batch is
        refused (400) when batching is off, empty, or longer than BATCH_MAX_OPERATIONS."""
        config = self.schema.config.batching_config  # type: ignore[attr-defined]
        if config is None:
            raise HTTPException(
                400, "Array batching is off on this server: send one operation per request."
            )
        limit = config["max_operations"]
        if not items or len(items) > limit:
            raise HTTPException(
                400, f"A batch holds 1 to {limit} operations; this one has {len(items)}."
            )
        if any(not isinstance(item, dict) for item in items):
            raise HTTPException(400, "Each operation of a batch must be a JSON object.")
        return [_request_data(item) for item in items]

    async def execute_operation(
        self,
        request: Any,
        request_adapter: Any,
        request_data: GraphQLRequestData | list[GraphQLRequestData],
        context: Any,
        root_value: Any,
        sub_response: Response,
    ) -> Any:
        """Strawberry's, but a batch's operations run in order, each with its own context
        (admission, rate-limit charge, dataloaders); a refusal of one refuses the batch."""
        run = super().execute_operation  # type: ignore[misc]
        if not isinstance(request_data, list):
            return await run(
                request=request,
                request_adapter=request_adapter,
                request_data=request_data,
                context=context,
                root_value=root_value,
                sub_response=sub_response,
            )
        if request.headers.get("idempotency-key") is not None:
            raise HTTPException(
                400, "An Idempotency-Key names one operation: send that mutation alone."
            )
        request.state.batch = True
        results = []
        for i, data in enumerate(request_data):
            own = context if i == 0 else await self.get_context(request, response=sub_response)  # type: ignore[attr-defined]
            results.append(
                await run(
                    request=request,
                    request_adapter=request_adapter,
                    request_data=data,
                    context=own,
                    root_value=root_value,
                    sub_response=sub_response,
                )
            )
        return results

    def encode_json(self, data: object) -> str:
        """Response bodies and WebSocket messages as a ``str`` (bytes would go out as
        binary frames): orjson, else the standard library (integers past 64 bits)."""
        try:
            return orjson.dumps(data).decode()
        except TypeError:
            return json.dumps(data, separators=(",", ":"))

    async def execute_single(
        self,
        request: Request,
        request_adapter: Any,
        sub_response: Response,
        context: Any,
        root_value: Any,
        request_data: GraphQLRequestData,
    ) -> ExecutionResult:
        """Run one operation behind the guards (see the module for the order)."""
        guards = self.guards
        method = request_adapter.method
        if request.state.media_type is None:
            raise RequestRefused.error(
                "This endpoint answers application/graphql-response+json or application/json.",
                "BAD_REQUEST",
                406,
                headers={"Accept": OFFERED},
            )
        ip = _client_ip(request)
        shared = await self._admit_and_charge(context, request_data, method, ip)
        refusal, prepaid = shared if shared is not None else (await self._admit(context), None)
        viewer = _viewer(context)
        principal = f"u:{viewer}" if viewer is not None else f"ip:{ip}"

        register = await self._resolve_persisted_query(request_data, principal, ip)

        info: OperationInfo | None = None
        if isinstance(request_data.query, str) and request_data.query:
            parsed = operation_info(
                request_data.query, request_data.operation_name, guards.config.max_tokens
            )
            if isinstance(parsed, str):
                await self._rate_limit(principal, ip, None)
                raise RequestRefused.error(parsed, "BAD_REQUEST", 400)
            info = parsed
        if refusal is not None:
            if info is None or not info.needs_no_viewer:
                await self._rate_limit(principal, ip, info, prepaid)
                raise RequestRefused.error(
                    refusal.message,
                    "UNAUTHENTICATED",
                    401,
                    headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
                )
            context.bearer = None  # logIn/signUp/refreshSession: the stale header is moot
            context.__dict__["viewer_id"] = None
        if info is not None and info.kind == "subscription":
            await self._rate_limit(principal, ip, info)
            raise RequestRefused.error(SUBSCRIPTIONS_OVER_WS, "BAD_REQUEST", 400)
        if info is not None and info.kind == "mutation" and method == "GET":
            raise RequestRefused.error(
                "Mutations are not allowed over GET: use POST.",
                "BAD_REQUEST",
                405,
                headers={"Allow": "POST"},
            )
        if context.bearer is None and info is not None and info.kind == "mutation":
            if not info.needs_no_viewer:  # refused as a whole, before anything runs
                await self._rate_limit(principal, ip, info, prepaid)
                raise RequestRefused.error(
                    SIGN_IN_FIRST, "UNAUTHENTICATED", 401, headers={"WWW-Authenticate": "Bearer"}
                )

        limited = await self._rate_limit(principal, ip, info, prepaid)
        sub_response.headers.update(limited.headers())  # RateLimit-* (app/ratelimit.py)
        if (
            isinstance(request_data.query, str)
            and "multipart/mixed" not in (request.headers.get("accept") or "").lower()
            and self.schema.incremental(request_data.query)  # type: ignore[attr-defined]
        ):
            raise RequestRefused.error(
                INCREMENTAL_NEEDS_MULTIPART,
                "BAD_REQUEST",
                406,
                headers={"Accept": "multipart/mixed"},
            )
        if not variables_within(request_data.variables, guards.config.max_tokens):
            raise RequestRefused.error(
                VARIABLES_TOO_LARGE.format(guards.config.max_tokens), "BAD_USER_INPUT", 400
            )

        if register is not None and info is not None and request_data.query:
            stored = await guards.apq_put(register.sha256, request_data.query)
            PERSISTED.labels("stored" if stored else "not_stored").inc()

        claim = None
        if info is not None and info.kind == "mutation" and method == "POST":
            claim = await self._claim_idempotency_key(request, request_data, viewer)

        run = super().execute_single  # type: ignore[misc]
        if claim is None:
            result = await run(
                request=request,
                request_adapter=request_adapter,
                sub_response=sub_response,
                context=context,
                root_value=root_value,
                request_data=request_data,
            )
            if method == "GET":
                request.state.cacheable = True  # ETag and 304 in __call__
                sub_response.headers["Vary"] = VARY
                sub_response.headers["Cache-Control"] = self._cache_control(
                    context, request_data, result
                )
            return result
        stored_response = False
        try:
            result = await run(
                request=request,
                request_adapter=request_adapter,
                sub_response=sub_response,
                context=context,
                root_value=root_value,
                request_data=request_data,
            )
            if _executed(result):
                payload = await self.process_result(request, result)
                body = self.encode_json_string(payload)  # type: ignore[attr-defined]
                stored_response = True
                await guards.idem_complete(
                    claim, StoredResponse(sub_response.status_code or 200, body)
                )
            return result
        finally:
            if not stored_response:
                await guards.idem_release(claim)

    def _cache_control(
        self, context: Any, request_data: GraphQLRequestData, result: ExecutionResult
    ) -> str:
        """The ``Cache-Control`` of a GET's answer (app/cache_policy.py)."""
        if context.bearer is not None:
            return PRIVATE
        if result.errors or not isinstance(request_data.query, str):
            return NO_STORE
        operations = self.schema.operations  # type: ignore[attr-defined]  # RoostSchema's
        return cache_control(
            False, operations.max_age(request_data.query, request_data.operation_name)
        )

    async def _admit_and_charge(
        self, context: Any, request_data: GraphQLRequestData, method: str, ip: str
    ) -> tuple[Refusal | None, Decision] | None:
        """:meth:`_admit` and the rate-limit charge in one Redis round trip when the
        charge cannot depend on the admission (a signed-in query or POSTed mutation sent
        as text): the refusal (None: admitted) and the decision; None otherwise."""
        bearer = context.bearer
        query = request_data.query
        extensions = request_data.extensions
        if bearer is None or not query or not isinstance(query, str):
            return None
        if extensions and "persistedQuery" in extensions:
            return None
        info = operation_info(query, request_data.operation_name, self.guards.config.max_tokens)
        if not isinstance(info, OperationInfo):
            return None
        if not (info.kind == "query" or (info.kind == "mutation" and method == "POST")):
            return None
        claims = self.doorkeeper.claims(bearer)
        if isinstance(claims, Refusal):
            return None
        try:
            shared = await self.guards.admit_and_charge(
                self.doorkeeper, claims, f"u:{claims.user_id}", ip, info
            )
        except AdmissionUnavailable as exc:
            raise unavailable_refusal(exc.dependency) from None
        if shared is None:
            return None
        outcome, decision = shared
        if isinstance(outcome, Refusal):
            return outcome, decision
        context.__dict__["viewer_id"] = outcome.user_id
        return None, decision

    async def _admit(self, context: Any) -> Refusal | None:
        """Admit the bearer token and set the context's viewer: the refusal when the
        token, its session or its account is bad or ended (None: admitted or anonymous)."""
        if context.bearer is None:
            return None
        try:
            outcome = await self.doorkeeper.admit(context.bearer)
        except AdmissionUnavailable as exc:
            raise unavailable_refusal(exc.dependency) from None
        if isinstance(outcome, Refusal):
            return outcome
        context.__dict__["viewer_id"] = outcome.user_id
        return None

    async def _resolve_persisted_query(
        self, request_data: GraphQLRequestData, principal: str, ip: str
    ) -> PersistedQueryRef | None:
        """Fill ``request_data.query`` from the APQ store when only a hash came; return
        the reference to store once the document parses (query and hash both came)."""
        try:
            ref = PersistedQueryRef.from_extensions(request_data.extensions)
            if ref is None:
                return None
            if not self.guards.config.apq_enabled:
                raise not_supported()
            if request_data.query:
                ref.check(request_data.query)
                return ref
            text = await self.guards.apq_get(ref.sha256)
            PERSISTED.labels("hit" if text is not None else "miss").inc()
            if text is None:
                await self._rate_limit(principal, ip, None)  # a miss is a request too
                raise not_found()
            request_data.query = text
            return None
        except PersistedQueryError as exc:
            headers = (
                {"Cache-Control": "private, no-cache, must-revalidate"}
                if exc.status == 200
                else None
            )
            raise RequestRefused.error(exc.message, exc.code, exc.status, headers=headers) from None

    async def _rate_limit(
        self,
        principal: str,
        ip: str,
        info: OperationInfo | None,
        prepaid: Decision | None = None,
    ) -> Decision:
        """The decision charging the request (``prepaid``: already charged); raises
        ``RATE_LIMITED`` (429) if a budget is spent."""
        decision = prepaid if prepaid is not None else await self.guards.charge(principal, ip, info)
        if decision.allowed:
            return decision
        raise RequestRefused.error(
            rate_limited_message(decision),
            "RATE_LIMITED",
            429,
            headers={"Retry-After": decision.retry_after_header},
            extensions=rate_limited_extensions(decision),
        )

    async def _claim_idempotency_key(
        self, request: Request, request_data: GraphQLRequestData, viewer: uuid.UUID | None
    ) -> Claim | None:
        """Claim the request's ``Idempotency-Key`` (None: no key, or Redis failed).
        A stored response is replayed (raised as :class:`RequestRefused`)."""
        try:
            key = parse_key(request.headers.getlist("idempotency-key"))
            if key is None:
                return None
            assert request_data.query is not None
            fp = fingerprint(
                request_data.query, request_data.operation_name, request_data.variables
            )
            outcome = await self.guards.idem_begin(redis_key(viewer, key), fp)
        except IdempotencyError as exc:
            headers = {"Retry-After": "1"} if exc.status == 409 else None
            raise RequestRefused.error(exc.message, exc.code, exc.status, headers=headers) from None
        if isinstance(outcome, StoredResponse):
            REPLAYS.inc()
            raise RequestRefused(
                Response(
                    outcome.body,
                    status_code=outcome.status,
                    media_type="application/json",
                    headers={"Idempotent-Replayed": "true"},
                )
            )
        return outcome


def _request_data(data: dict[str, Any]) -> GraphQLRequestData:
    """One operation of a JSON body, checked as Strawberry checks it (400 otherwise)."""
    query = data.get("query")
    if not isinstance(query, str | None):
        raise HTTPException(
            400, "The GraphQL operation's `query` must be a string or null, if provided."
        )
    variables = data.get("variables")
    if not isinstance(variables, dict | None):
        raise HTTPException(
            400, "The GraphQL operation's `variables` must be an object or null, if provided."
        )
    extensions = data.get("extensions")
    if not isinstance(extensions, dict | None):
        raise HTTPException(
            400,
            "The GraphQL operation's `extensions` must be an object or null, if provided.",
        )
    return GraphQLRequestData(
        query=query,
        variables=variables,
        operation_name=data.get("operationName"),
        extensions=extensions,
        protocol="http",
    )
