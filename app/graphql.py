"""The Strawberry schema: root types, scalar overrides, limits and error masking."""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Iterator

import strawberry
from graphql import DocumentNode, GraphQLError, parse
from strawberry.extensions import (
    MaskErrors,
    MaxTokensLimiter,
    ParserCache,
    ValidationCache,
)
from strawberry.schema.config import StrawberryConfig
from strawberry.schema.exceptions import (
    CannotGetOperationTypeError,
    InvalidOperationTypeError,
)
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from app.document_limits import DocumentLimiter
from app.http_edge import REQUEST_ID
from app.settings import Settings
from domain.identity.errors import AccountUnavailableError
from domain.unavailable import POSTGRES, REDIS, unavailable_dependency
from resolvers import Mutation, Query, Subscription
from schema.context import Context
from schema.read_routing import ReadRoutingExtension
from schema.realtime import SubscriptionEvent
from schema.scalars import SCALAR_MAP

log = logging.getLogger("roost.graphql")


def _should_mask(error: GraphQLError) -> bool:
    """Mask unexpected exceptions raised while resolving a field. Keep errors that carry a
    code, and errors without a path: those are about the document or its variables
    (parse, validation, variable coercion), which graphql-core wraps with an
    ``original_error`` too, and are the client's to fix."""
    if error.extensions and "code" in error.extensions:
        return False
    if isinstance(error.original_error, AccountUnavailableError):
        return False  # the actor was banned or deleted mid-request: UNAUTHENTICATED
    return error.path is not None and error.original_error is not None


#: graphql-core 3.3 parses empty selection sets (``{ viewer {} }``, graphql-spec#1227),
#: on which Strawberry's QueryDepthLimiter crashes (``max()`` of nothing) outside the
#: error masking. Roost keeps the grammar ``SelectionSet : { Selection+ }``: they are
#: syntax errors.
_STRICT_GRAMMAR = (
    {"allow_empty_selection_sets": False}
    if "allow_empty_selection_sets" in inspect.signature(parse).parameters
    else {}
)


@functools.lru_cache(maxsize=512)
def parse_document(query: str, max_tokens: int) -> DocumentNode:
    """``query`` parsed with Roost's grammar within ``max_tokens`` (GraphQLError if it
    does not parse), cached per text: the HTTP guards and the schema's parse step share
    it, so a new document is parsed once."""
    return parse(query, max_tokens=max_tokens, **_STRICT_GRAMMAR)


class RoostParserCache(ParserCache):
    """ParserCache that parses with Roost's grammar and leaves a document it cannot parse
    to Strawberry's own parse step.

    An error raised inside a ``parsing`` hook escapes the operation's extensions (so
    :class:`RoostMaskErrors` never sees it and it would go out without a code); the
    same error raised by Strawberry's parse step is returned through them.
    """

    def on_parse(self) -> Iterator[None]:
        ctx = self.execution_context
        ctx.parse_options.update(_STRICT_GRAMMAR)  # type: ignore[typeddict-item]
        try:
            ctx.graphql_document = parse_document(ctx.query, ctx.parse_options["max_tokens"])
        except GraphQLError:
            ctx.graphql_document = None  # parsed again (bounded by max_tokens) and reported
        yield


class RoostValidationCache(ValidationCache):
    """ValidationCache that first checks Roost's document limits (depth, aliases, field
    merges, expanded size: app/document_limits.py) in one linear pass, and skips
    graphql-core's validation, whose field-merging rule is quadratic, when one is
    passed."""

    def __init__(self, limiter: DocumentLimiter, maxsize: int) -> None:
        super().__init__(maxsize=maxsize)
        self.limiter = limiter

    def on_validate(self) -> Iterator[None]:
        ctx = self.execution_context
        assert ctx.graphql_document is not None
        error = self.limiter.check(ctx.query, ctx.graphql_document)
        if error is not None:
            ctx.pre_execution_errors = [error]
            yield
            return
        yield from super().on_validate()


#: Seconds a client should wait before retrying after SERVICE_UNAVAILABLE.
RETRY_AFTER_UNAVAILABLE_S = 5
_UNAVAILABLE_MESSAGES = {
    POSTGRES: "The database is unavailable for a moment: retry in a few seconds.",
    REDIS: "A cache server is unavailable for a moment: retry in a few seconds.",
}


def unavailable_error(dependency: str) -> tuple[str, dict[str, object]]:
    """The message and extensions of ``SERVICE_UNAVAILABLE`` when ``dependency``
    (``domain.unavailable.POSTGRES`` or ``REDIS``) is down."""
    return _UNAVAILABLE_MESSAGES[dependency], {
        "code": "SERVICE_UNAVAILABLE",
        "dependency": dependency,
        "retryAfter": RETRY_AFTER_UNAVAILABLE_S,
    }


class RoostMaskErrors(MaskErrors):
    """MaskErrors that keeps ``extensions.code`` on every error: INTERNAL_SERVER_ERROR for
    masked ones, SERVICE_UNAVAILABLE (with ``retryAfter``, seconds) when a field failed
    because PostgreSQL or Redis is down, GRAPHQL_PARSE_FAILED / GRAPHQL_VALIDATION_FAILED
    for document errors and BAD_USER_INPUT for variables that do not fit their types
    (found once execution starts).

    Each internal error is logged once, at ERROR with its traceback and the request id
    (``X-Request-ID``); a dependency outage once per request, at WARNING, without one.
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._executing = False
        self._outage_logged = False

    def on_execute(self) -> Iterator[None]:
        self._executing = True
        yield

    def anonymise_error(self, error: GraphQLError) -> GraphQLError:
        original = error.original_error
        dependency = unavailable_dependency(original) if original is not None else None
        if dependency is not None:
            if not self._outage_logged:
                self._outage_logged = True
                log.warning(
                    "request %s: %s unavailable at %s (%s: %s)",
                    REQUEST_ID.get(),
                    dependency,
                    error.path,
                    type(original).__name__,
                    original,
                )
            message, extensions = unavailable_error(dependency)
        else:
            log.error(
                "request %s: internal error at %s", REQUEST_ID.get(), error.path, exc_info=original
            )
            message = self.error_message
            extensions = {"code": "INTERNAL_SERVER_ERROR"}
        return GraphQLError(
            message=message,
            nodes=error.nodes,
            source=error.source,
            positions=error.positions,
            path=error.path,
            extensions=extensions,
        )

    def _process_result(self, result: object) -> None:
        # Strawberry's version tests a runtime-checkable Protocol (~50 us with typing's
        # isinstance), once per subscription event; only results with errors matter.
        errors = getattr(result, "errors", None)
        if errors:
            result.errors = self._process_errors(errors)  # type: ignore[attr-defined]

    def _process_errors(self, errors: list[GraphQLError]) -> list[GraphQLError]:
        out = []
        for error in super()._process_errors(errors):
            if not (error.extensions and "code" in error.extensions):
                if isinstance(error.original_error, AccountUnavailableError):
                    code = "UNAUTHENTICATED"
                elif error.message.startswith("Syntax Error"):
                    code = "GRAPHQL_PARSE_FAILED"
                elif self._executing:
                    code = "BAD_USER_INPUT"  # variable coercion, after validation passed
                else:
                    code = "GRAPHQL_VALIDATION_FAILED"
                error.extensions = {**(error.extensions or {}), "code": code}
            out.append(error)
        return out


class RoostExecutionContext(StrawberryGraphQLCoreExecutionContext):
    """graphql-core's executor with fresh contexts over WebSocket: each operation on a
    socket gets its own copy of the connection's context (``Context.for_event``), and
    each subscription event runs in the context its :class:`SubscriptionEvent` carries,
    so dataloaders are never shared across operations or events."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        ctx = self.context_value
        if isinstance(ctx, Context) and ctx.connection_params is not None:
            self.context_value = ctx.for_event()

    def build_per_event_executor(self, payload):
        executor = super().build_per_event_executor(payload)
        # graphql-core 3.3 builds the per-event executor with a shallow copy, so every
        # event added its subfield memo entries (each keeping its field list alive) to
        # the one dict of the subscription: ~20 objects leaked per event for as long as
        # the socket lives, and ever longer full GC pauses. Each event gets its own.
        executor._relevant_sub_fields = {}
        if isinstance(payload, SubscriptionEvent):
            executor.context_value = payload.context
            executor.root_value = payload.value
        return executor


#: Errors about the request, the client's to fix: graphql-core's, and Strawberry's for
#: an operation type the transport does not run or no operation to run.
CLIENT_ERRORS = (GraphQLError, InvalidOperationTypeError, CannotGetOperationTypeError)


class RoostSchema(strawberry.Schema):
    """Strawberry's schema, logging the errors of requests as they deserve: a client's
    mistake (a document that does not parse or validate, bad variables, a refused
    request: every error that carries a code or comes from graphql-core) at DEBUG, one
    line; faults at ERROR with their traceback (those at a field are logged once, when
    :class:`RoostMaskErrors` masks them)."""

    def process_errors(self, errors: list[GraphQLError], execution_context=None) -> None:
        for error in errors:
            original = error.original_error
            if original is None or isinstance(original, CLIENT_ERRORS) or error.path:
                log.debug("graphql error: %s", error.message)
            else:
                log.error("graphql error: %s", error.message, exc_info=original)


def build_schema(settings: Settings) -> strawberry.Schema:
    """Return the executable schema with Roost's limits (tokens, then depth, aliases and
    field merges before validation), parser
    and validation caches, masking of internal errors, and subscriptions whose events
    each resolve in their own context (:class:`RoostExecutionContext`)."""
    limiter = DocumentLimiter(settings.document_limits)
    return RoostSchema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        execution_context_class=RoostExecutionContext,
        config=StrawberryConfig(scalar_map=SCALAR_MAP),
        # Factories: each request gets fresh extension instances.
        extensions=[
            lambda: RoostParserCache(maxsize=512),
            lambda: RoostValidationCache(limiter, maxsize=512),
            lambda: MaxTokensLimiter(max_token_count=settings.max_tokens),
            lambda: RoostMaskErrors(
                should_mask_error=_should_mask, error_message="Internal server error."
            ),
            # Read replicas: queries read where the context's read source says.
            *([ReadRoutingExtension] if settings.replica_urls else []),
        ],
    )
