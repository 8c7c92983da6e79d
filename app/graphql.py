"""The Strawberry schema: root types, scalar overrides, and Roost's operation rules
(limits, caches, error masking, read routing: app/operation.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import strawberry
from graphql import BREAK, DirectiveNode, GraphQLError, Visitor, visit
from strawberry.exceptions import MissingQueryError
from strawberry.execution import optimized_is_awaitable
from strawberry.schema.config import StrawberryConfig
from strawberry.schema.schema import (
    DEFAULT_ALLOWED_OPERATION_TYPES,
    StrawberryGraphQLCoreExecutionContext,
)
from strawberry.types.execution import ExecutionResult
from strawberry.types.graphql import OperationType

from app import error_words
from app.document_limits import DocumentLimiter
from app.operation import RoostOperation, RoostOperations, log_errors
from app.settings import Settings
from resolvers import Mutation, Query, Subscription
from schema.context import Context
from schema.descriptions import describe
from schema.realtime.events import SubscriptionEvent
from schema.scalars import SCALAR_MAP


class RoostExecutionContext(StrawberryGraphQLCoreExecutionContext):
    """graphql-core's executor with fresh contexts over WebSocket: each socket operation
    copies the connection's context, each subscription event runs in the context its
    :class:`SubscriptionEvent` carries, so dataloaders are never shared."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        ctx = self.context_value
        if isinstance(ctx, Context) and ctx.connection_params is not None:
            self.context_value = ctx.for_event()

    def execute_operation(self, serially: bool | None = None) -> Any:
        """graphql-core's, then the executor drops its helpers (bound methods: a
        reference cycle only the cyclic collector would free)."""
        result = super().execute_operation(serially)
        if self.is_awaitable(result):
            return self._release_after(result)
        self.async_helpers = None  # type: ignore[assignment]  # released, never read again
        return result

    async def _release_after(self, result: Any) -> Any:
        try:
            return await result
        finally:
            self.async_helpers = None  # type: ignore[assignment]  # released, never read again

    def build_per_event_executor(self, payload):
        executor = super().build_per_event_executor(payload)
        # graphql-core copies the per-event executor shallowly: without its own memo,
        # every event would add entries to the subscription's one dict.
        executor._relevant_sub_fields = {}
        if isinstance(payload, SubscriptionEvent):
            executor.context_value = payload.context
            executor.root_value = payload.value
        return executor


class RoostSchema(strawberry.Schema):
    """Strawberry's schema with Roost's operation rules: queries and mutations over HTTP
    run through :meth:`RoostOperations.execute`, everything else through Strawberry's
    path with the one :class:`RoostOperation` extension."""

    def __init__(
        self,
        *,
        limiter: DocumentLimiter,
        max_tokens: int,
        plans: bool = True,
        introspection: bool = True,
        **kwargs: Any,
    ):
        self.operations: RoostOperations | None = None
        super().__init__(
            # A factory: each operation gets its own extension instance.
            extensions=[lambda: RoostOperation(self._operations())],
            **kwargs,
        )
        describe(self._schema)  # the descriptions conventions imply (schema/descriptions.py)
        self.operations = RoostOperations(
            self._schema,
            limiter,
            max_tokens,
            executor_class=self.execution_context_class or RoostExecutionContext,
            is_awaitable=optimized_is_awaitable,
            plans=plans,
            introspection=introspection,
        )

    def _operations(self) -> RoostOperations:
        assert self.operations is not None
        return self.operations

    async def execute(
        self,
        query: str | None,
        variable_values: dict[str, Any] | None = None,
        context_value: Any | None = None,
        root_value: Any | None = None,
        operation_name: str | None = None,
        allowed_operation_types: Iterable[OperationType] | None = None,
        operation_extensions: dict[str, Any] | None = None,
    ) -> ExecutionResult:
        """Run a query or mutation (``MissingQueryError`` without a query); one applying
        ``@defer`` or ``@stream`` runs on Strawberry's path, its result the initial
        payload and the stream of the rest."""
        if not query:
            raise MissingQueryError
        if self.incremental(query):
            return await super().execute(
                query,
                variable_values=variable_values,
                context_value=context_value,
                root_value=root_value,
                operation_name=operation_name,
                allowed_operation_types=allowed_operation_types,
                operation_extensions=operation_extensions,
            )
        return await self._operations().execute(
            query,
            variable_values=variable_values,
            context_value=context_value,
            root_value=root_value,
            operation_name=operation_name,
            allowed_operation_types=(
                DEFAULT_ALLOWED_OPERATION_TYPES
                if allowed_operation_types is None
                else allowed_operation_types
            ),
            operation_extensions=operation_extensions,
        )

    def incremental(self, query: str) -> bool:
        """Whether the document applies ``@defer`` or ``@stream`` (not merely names them
        in a string or comment); False when it does not parse."""
        if "@defer" not in query and "@stream" not in query:
            return False
        try:
            document = self._operations().documents.check(query).document
        except GraphQLError:
            return False
        found = False

        class Finder(Visitor):
            def enter_directive(self, node: DirectiveNode, *_: object) -> object:
                nonlocal found
                if node.name.value in ("defer", "stream"):
                    found = True
                    return BREAK
                return None

        visit(document, Finder())
        return found

    def process_errors(self, errors: list[GraphQLError], execution_context=None) -> None:
        """Log an operation's errors before masking (app/operation.log_errors)."""
        log_errors(errors)


def build_schema(settings: Settings) -> strawberry.Schema:
    """The executable schema of ``settings``."""
    error_words.install()
    return RoostSchema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        execution_context_class=RoostExecutionContext,
        config=StrawberryConfig(
            scalar_map=SCALAR_MAP,
            # @defer and @stream (graphql-core 3.3), sent over HTTP as multipart/mixed
            enable_experimental_incremental_execution=True,
            batching_config=(
                {"max_operations": settings.batch_max_operations}
                if settings.batch_enabled
                else None
            ),
        ),
        limiter=DocumentLimiter(settings.document_limits),
        max_tokens=settings.max_tokens,
        plans=settings.execution_plans,
        introspection=settings.introspection_on,
    )
