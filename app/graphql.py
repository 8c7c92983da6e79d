"""The Strawberry schema: root types, scalar overrides, limits and error masking."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterator

import strawberry
from graphql import GraphQLError, parse
from strawberry.extensions import (
    AddValidationRules,
    MaskErrors,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    ValidationCache,
)
from strawberry.schema.config import StrawberryConfig
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from app.settings import Settings
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
            ctx.graphql_document = self.cached_parse_document(ctx.query, **ctx.parse_options)
        except GraphQLError:
            ctx.graphql_document = None  # parsed again (bounded by max_tokens) and reported
        yield


class RoostMaskErrors(MaskErrors):
    """MaskErrors that keeps ``extensions.code`` on every error: INTERNAL_SERVER_ERROR for
    masked ones, GRAPHQL_PARSE_FAILED / GRAPHQL_VALIDATION_FAILED for document errors and
    BAD_USER_INPUT for variables that do not fit their types (found once execution starts).
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._executing = False

    def on_execute(self) -> Iterator[None]:
        self._executing = True
        yield

    def anonymise_error(self, error: GraphQLError) -> GraphQLError:
        log.error("internal error at %s", error.path, exc_info=error.original_error)
        return GraphQLError(
            message=self.error_message,
            nodes=error.nodes,
            source=error.source,
            positions=error.positions,
            path=error.path,
            extensions={"code": "INTERNAL_SERVER_ERROR"},
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
                if error.message.startswith("Syntax Error"):
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


def build_schema(settings: Settings) -> strawberry.Schema:
    """Return the executable schema with Roost's limits (depth, aliases, tokens), parser
    and validation caches, masking of internal errors, and subscriptions whose events
    each resolve in their own context (:class:`RoostExecutionContext`)."""
    limit_rules = [
        *QueryDepthLimiter(max_depth=settings.max_query_depth).validation_rules,
        *MaxAliasesLimiter(max_alias_count=settings.max_aliases).validation_rules,
    ]
    return strawberry.Schema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        execution_context_class=RoostExecutionContext,
        config=StrawberryConfig(scalar_map=SCALAR_MAP),
        # Factories: each request gets fresh extension instances.
        extensions=[
            lambda: RoostParserCache(maxsize=512),
            lambda: ValidationCache(maxsize=512),
            # The same rule classes for every request, or ValidationCache never hits.
            lambda: AddValidationRules(limit_rules),
            lambda: MaxTokensLimiter(max_token_count=settings.max_tokens),
            lambda: RoostMaskErrors(
                should_mask_error=_should_mask, error_message="Internal server error."
            ),
            # Read replicas: queries read where the context's read source says.
            *([ReadRoutingExtension] if settings.replica_urls else []),
        ],
    )
