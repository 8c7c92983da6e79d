"""One GraphQL operation's rules, whatever the transport: parse within ``MAX_TOKENS``
(app/parsing.py), the document limits (app/document_limits.py) and validation, both
cached per query text (:class:`Documents`); read routing (schema/read_routing.py); error
masking with ``extensions.code`` (:class:`ErrorMasking`).

Two paths share them: :meth:`RoostOperations.execute` for queries and mutations over
HTTP (graphql-core's executor, without Strawberry's per-request extensions), and
:class:`RoostOperation`, a Strawberry extension with one hook per phase, for WebSocket
operations and subscription events.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from graphql import (
    DocumentNode,
    GraphQLError,
    GraphQLSchema,
    NoSchemaIntrospectionCustomRule,
    experimental_execute_incrementally,
    specified_rules,
    validate,
)
from graphql import ExecutionResult as GraphQLExecutionResult
from strawberry.extensions import MaskErrors
from strawberry.schema.exceptions import (
    CannotGetOperationTypeError,
    InvalidOperationTypeError,
)
from strawberry.schema.schema import MaybeNullValidationRule, OneOfInputValidationRule
from strawberry.types.execution import ExecutionResult, PreExecutionError
from strawberry.types.graphql import OperationType
from strawberry.utils.await_maybe import await_maybe
from strawberry.utils.operation import get_first_operation, get_operation_type

from adapters.postgres import commits
from adapters.unavailable import POSTGRES, REDIS, unavailable_dependency
from app.cache_policy import max_age
from app.document_limits import DocumentLimiter
from app.error_words import in_graphql_words
from app.execution_plan import Abandoned, Plan, build_plan
from app.http_edge import REQUEST_ID
from app.parsing import (
    CACHED_DOCUMENT_MAX_CHARS,
    DOCUMENT_CACHE_SIZE,
    STRICT_GRAMMAR,
    parse_document,
)
from domain.identity.errors import AccountUnavailableError
from schema.read_routing import after_operation, before_operation

log = logging.getLogger("roost.graphql")

#: Masked errors say this.
INTERNAL_ERROR_MESSAGE = "Internal server error."
#: graphql-core's rules and Strawberry's two (``Maybe`` and ``@oneOf`` inputs).
VALIDATION_RULES = (*specified_rules, MaybeNullValidationRule, OneOfInputValidationRule)


# --- documents ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Checked:
    """A parsed document and its limit or validation errors (empty: it may run). ``plans`` (None:
    not plannable) and ``max_ages`` (by operation name, made on first use) exist only for documents
    kept in the cache."""

    document: DocumentNode
    errors: tuple[GraphQLError, ...]
    plans: dict[str | None, Plan | None] | None = field(default=None, compare=False)
    max_ages: dict[str | None, int] | None = field(default=None, compare=False)


class Documents:
    """Parsed, limit-checked and validated documents per query text (an LRU of
    ``maxsize``); a document that does not parse raises GraphQLError and is not kept."""

    def __init__(
        self,
        schema: GraphQLSchema,
        limiter: DocumentLimiter,
        max_tokens: int,
        maxsize: int = DOCUMENT_CACHE_SIZE,
        introspection: bool = True,
    ) -> None:
        self.schema = schema
        #: Without introspection, ``__schema`` and ``__type`` fail validation.
        self.rules = (
            VALIDATION_RULES
            if introspection
            else (*VALIDATION_RULES, NoSchemaIntrospectionCustomRule)
        )
        self.limiter = limiter
        self.max_tokens = max_tokens
        self.maxsize = maxsize
        self._cache: OrderedDict[str, Checked] = OrderedDict()

    def parse(self, query: str) -> DocumentNode:
        """The parsed document (GraphQLError when it does not parse)."""
        return parse_document(query, self.max_tokens)

    def check(self, query: str) -> Checked:
        """The document of ``query`` with its limit and validation errors."""
        cache = self._cache
        checked = cache.get(query)
        if checked is not None:
            cache.move_to_end(query)
            return checked
        document = self.parse(query)
        return self.remember(query, document)

    def validate(self, query: str | None, document: DocumentNode) -> tuple[GraphQLError, ...]:
        """The limit refusal or validation errors of ``document``, cached by ``query``."""
        if query is None:
            return self._errors(None, document)
        checked = self._cache.get(query)
        if checked is not None and checked.document is document:
            self._cache.move_to_end(query)
            return checked.errors
        return self.remember(query, document).errors

    def remember(self, query: str, document: DocumentNode) -> Checked:
        if len(query) > CACHED_DOCUMENT_MAX_CHARS:
            # not kept (see CACHED_DOCUMENT_MAX_CHARS), and so never planned
            return Checked(document, self._errors(query, document))
        checked = Checked(document, self._errors(query, document), {}, {})
        self._cache[query] = checked
        if len(self._cache) > self.maxsize:
            self._cache.popitem(last=False)
        return checked

    def _errors(self, query: str | None, document: DocumentNode) -> tuple[GraphQLError, ...]:
        # The linear limits first: graphql-core's field-merging rule is quadratic.
        refusal = self.limiter.check(query, document)
        if refusal is not None:
            return (refusal,)
        return tuple(validate(self.schema, document, self.rules))


# --- errors ------------------------------------------------------------------------------

#: Seconds a client should wait before retrying after SERVICE_UNAVAILABLE.
RETRY_AFTER_UNAVAILABLE_S = 5
_UNAVAILABLE_MESSAGES = {
    POSTGRES: "The database is unavailable for a moment: retry in a few seconds.",
    REDIS: "A cache server is unavailable for a moment: retry in a few seconds.",
}


SAVED_PAYLOAD_UNAVAILABLE = (
    "Your change was saved, but reading it back failed because a server is unavailable"
    " for a moment: do not send it again; read it in a few seconds."
)


def _watch_commits(kind: OperationType) -> None:
    """Note what a mutation commits (adapters.postgres.commits); nothing for the rest."""
    if kind is OperationType.MUTATION:
        commits.watch()
    else:
        commits.unwatch()


def unavailable_error(dependency: str) -> tuple[str, dict[str, object]]:
    """The message and extensions of ``SERVICE_UNAVAILABLE`` for ``dependency``."""
    return _UNAVAILABLE_MESSAGES[dependency], {
        "code": "SERVICE_UNAVAILABLE",
        "dependency": dependency,
        "retryAfter": RETRY_AFTER_UNAVAILABLE_S,
    }


def outage_error(exc: BaseException) -> GraphQLError | None:
    """The ``SERVICE_UNAVAILABLE`` error of ``exc`` if it says a dependency is down, else None."""
    dependency = unavailable_dependency(exc)
    if dependency is None or dependency not in _UNAVAILABLE_MESSAGES:
        return None
    message, extensions = unavailable_error(dependency)
    return GraphQLError(message, extensions=extensions)


def should_mask(error: GraphQLError) -> bool:
    """Whether ``error`` is a fault to mask: not when it carries a code, has no path (a
    document or variables error) or is :func:`refused_argument`; always when it is an
    exception a subscription's event stream raised (:func:`_stream_fault`)."""
    if error.extensions and "code" in error.extensions:
        return False
    if isinstance(error.original_error, AccountUnavailableError):
        return False  # the actor was banned or deleted mid-request: UNAUTHENTICATED
    if refused_argument(error):
        return False
    if _stream_fault(error):
        return True
    return error.path is not None and error.original_error is not None


def _stream_fault(error: GraphQLError) -> bool:
    """Whether ``error`` is an exception a subscription's event stream raised, as
    Strawberry wraps it (no path, the exception's own message): a server fault."""
    original = error.original_error
    return (
        error.path is None
        and original is not None
        and not isinstance(original, GraphQLError)
        and error.message == str(original)
    )


def refused_argument(error: GraphQLError) -> bool:
    """Whether a field's error is graphql-core refusing an argument value after
    validation passed (``null`` for a non-null argument with a default, sent through a
    nullable variable): raised inside graphql-core, not by a resolver."""
    original = error.original_error
    if not isinstance(original, GraphQLError) or (original.extensions or {}).get("code"):
        return False
    tb = original.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:  # the frame that raised it
        tb = tb.tb_next
    return str(tb.tb_frame.f_globals.get("__name__", "")).startswith("graphql.")


class ErrorMasking:
    """The errors of one operation as the client sees them, each with an
    ``extensions.code`` (docs/api/errors.md). A masked fault is logged at ERROR with
    its traceback and request id; a dependency outage once at WARNING."""

    __slots__ = ("executing", "outage_logged")

    def __init__(self) -> None:
        self.executing = False
        self.outage_logged = False

    def errors(self, errors: Iterable[GraphQLError]) -> list[GraphQLError]:
        """``errors`` masked and coded (coded ones as they are)."""
        out = []
        for error in errors:
            if should_mask(error):
                error = self.anonymise(error)
            elif not (error.extensions and "code" in error.extensions):
                if isinstance(error.original_error, AccountUnavailableError):
                    code = "UNAUTHENTICATED"
                elif error.message.startswith("Syntax Error"):
                    code = "GRAPHQL_PARSE_FAILED"
                elif self.executing:
                    code = "BAD_USER_INPUT"  # variable coercion, after validation passed
                else:
                    code = "GRAPHQL_VALIDATION_FAILED"
                error.extensions = {**(error.extensions or {}), "code": code}
            error.message = in_graphql_words(error.message)
            out.append(error)
        return out

    def anonymise(self, error: GraphQLError) -> GraphQLError:
        """The masked twin of a fault at a field (logged here)."""
        original = error.original_error
        dependency = unavailable_dependency(original) if original is not None else None
        extensions: dict[str, object]
        if dependency is not None:
            if not self.outage_logged:
                self.outage_logged = True
                log.warning(
                    "request %s: %s unavailable at %s (%s: %s)",
                    REQUEST_ID.get(),
                    dependency,
                    error.path,
                    type(original).__name__,
                    original,
                )
            record = commits.current()
            if record is not None and record.wrote:
                message = SAVED_PAYLOAD_UNAVAILABLE
                extensions = {"code": "PAYLOAD_UNAVAILABLE"}
            else:
                message, extensions = unavailable_error(dependency)
        else:
            log.error(
                "request %s: internal error at %s", REQUEST_ID.get(), error.path, exc_info=original
            )
            message = INTERNAL_ERROR_MESSAGE
            extensions = {"code": "INTERNAL_SERVER_ERROR"}
        return GraphQLError(
            message=message,
            nodes=error.nodes,
            source=error.source,
            positions=error.positions,
            path=error.path,
            extensions=extensions,
        )


#: Errors about the request, the client's to fix.
CLIENT_ERRORS = (GraphQLError, InvalidOperationTypeError, CannotGetOperationTypeError)


def log_errors(errors: Iterable[GraphQLError]) -> None:
    """Log an operation's errors before masking: a client's mistake (coded, or from
    graphql-core) at DEBUG, a fault outside any field at ERROR with its traceback."""
    for error in errors:
        original = error.original_error
        if original is None or isinstance(original, CLIENT_ERRORS) or error.path:
            log.debug("graphql error: %s", error.message)
        else:
            log.error("graphql error: %s", error.message, exc_info=original)


# --- the two paths -----------------------------------------------------------------------


class RoostOperations:
    """The operation rules of one schema; :meth:`execute` is the direct path of queries
    and mutations over HTTP."""

    def __init__(
        self,
        schema: GraphQLSchema,
        limiter: DocumentLimiter,
        max_tokens: int,
        executor_class: type,
        is_awaitable: Callable[[Any], bool],
        plans: bool = True,
        introspection: bool = True,
    ) -> None:
        self.schema = schema
        self.documents = Documents(schema, limiter, max_tokens, introspection=introspection)
        self.max_tokens = max_tokens
        self.executor_class = executor_class
        self.is_awaitable = is_awaitable
        self.plans = plans

    def plan_of(self, checked: Checked, operation_name: str | None) -> Plan | None:
        """The execution plan of a cached, valid document's operation (made once), or
        None: not kept, not plannable, or plans turned off (EXECUTION_PLANS)."""
        plans = checked.plans
        if plans is None or not self.plans or checked.errors:
            return None
        try:
            return plans[operation_name]
        except KeyError:
            plan = plans[operation_name] = build_plan(self.schema, checked.document, operation_name)
            return plan

    def max_age(self, query: str, operation_name: str | None) -> int:
        """:func:`app.cache_policy.max_age` of ``query``'s operation, once per document."""
        try:
            checked = self.documents.check(query)
        except GraphQLError:
            return 0
        if checked.errors:
            return 0
        ages = checked.max_ages
        if ages is None:
            return max_age(self.schema, checked.document, operation_name)
        try:
            return ages[operation_name]
        except KeyError:
            age = ages[operation_name] = max_age(self.schema, checked.document, operation_name)
            return age

    async def run_plan(
        self,
        plan: Plan,
        document: DocumentNode,
        *,
        variable_values: dict[str, Any] | None,
        context_value: Any,
        root_value: Any,
        operation_name: str | None,
        operation_extensions: dict[str, Any] | None,
    ) -> Any:
        """The planned run's ExecutionResult, or None when graphql-core must run the
        operation instead (variables that do not coerce, a value off the plan)."""
        if plan.static is not None:  # { __typename }: nothing to resolve, no variables
            return GraphQLExecutionResult(dict(plan.static), None)
        executor = self.executor_class.build(  # type: ignore[attr-defined]
            self.schema,
            document,
            root_value,
            context_value,
            variable_values,
            operation_name,
            is_awaitable=self.is_awaitable,
            operation_extensions=operation_extensions,
        )
        if isinstance(executor, list) or executor.middleware_manager is not None:
            return None  # variable errors: graphql-core reports them
        try:
            data, errors = await plan.run(executor)
        except Exception as exc:  # Abandoned (or a fault of the plan): graphql-core runs it
            log.debug(
                "planned execution abandoned; running on graphql-core",
                exc_info=not isinstance(exc, Abandoned),
            )
            return None
        finally:
            executor.async_helpers = None  # the executor's reference cycle, as released
        return GraphQLExecutionResult(data, errors or None)

    async def execute(
        self,
        query: str,
        *,
        variable_values: dict[str, Any] | None,
        context_value: Any,
        root_value: Any,
        operation_name: str | None,
        allowed_operation_types: Iterable[OperationType],
        operation_extensions: dict[str, Any] | None,
    ) -> ExecutionResult:
        """Run one query or mutation as Strawberry's ``Schema.execute`` would with
        :class:`RoostOperation` (same results, same exceptions: ``CannotGetOperationTypeError``,
        ``InvalidOperationTypeError``)."""
        masking = ErrorMasking()
        try:
            checked = self.documents.check(query)
        except GraphQLError as error:  # does not parse
            log_errors((error,))
            return PreExecutionError(data=None, errors=masking.errors((error,)), extensions={})
        document = checked.document
        if operation_name is None:  # the first operation's, as Strawberry names it
            first = get_first_operation(document)
            operation_name = first.name.value if first and first.name else None
        try:
            kind = get_operation_type(document, operation_name)
        except RuntimeError as error:
            raise CannotGetOperationTypeError(operation_name) from error
        if kind not in allowed_operation_types:
            raise InvalidOperationTypeError(kind)
        if checked.errors:
            errors = list(checked.errors)
            log_errors(errors)
            return PreExecutionError(data=None, errors=masking.errors(errors), extensions={})
        masking.executing = True
        plan = self.plan_of(checked, operation_name) if kind is OperationType.QUERY else None
        _watch_commits(kind)
        try:
            await before_operation(context_value, kind)
            result = None
            if plan is not None:
                result = await self.run_plan(
                    plan,
                    document,
                    variable_values=variable_values,
                    context_value=context_value,
                    root_value=root_value,
                    operation_name=operation_name,
                    operation_extensions=operation_extensions,
                )
            if result is None:
                result = await self._generic(
                    document,
                    variable_values=variable_values,
                    context_value=context_value,
                    root_value=root_value,
                    operation_name=operation_name,
                    operation_extensions=operation_extensions,
                )
            await after_operation(context_value, kind)
        except Exception as exc:  # a fault outside any field (read routing, the executor)
            fault = GraphQLError(str(exc), original_error=exc)
            log_errors((fault,))
            return ExecutionResult(data=None, errors=[masking.anonymise(fault)], extensions={})
        field_errors = result.errors
        if field_errors:
            log_errors(field_errors)
            field_errors = masking.errors(field_errors)
        return ExecutionResult(data=result.data, errors=field_errors, extensions={})

    async def _generic(
        self,
        document: DocumentNode,
        *,
        variable_values: dict[str, Any] | None,
        context_value: Any,
        root_value: Any,
        operation_name: str | None,
        operation_extensions: dict[str, Any] | None,
    ) -> Any:
        """graphql-core's ExecutionResult of the operation: never incremental here, as
        documents applying ``@defer``/``@stream`` run on ``RoostSchema.execute``."""
        return await await_maybe(
            experimental_execute_incrementally(
                self.schema,
                document,
                root_value=root_value,
                variable_values=variable_values,
                operation_name=operation_name,
                context_value=context_value,
                # Strawberry's predicate returns a bool graphql-core types as a TypeGuard
                is_awaitable=self.is_awaitable,  # type: ignore[arg-type]
                executor_class=self.executor_class,
                operation_extensions=operation_extensions,
            )
        )


class RoostOperation(MaskErrors):
    """Strawberry's extension running the module's rules for WebSocket operations and
    subscription events."""

    def __init__(self, operations: RoostOperations) -> None:
        super().__init__(should_mask_error=should_mask, error_message=INTERNAL_ERROR_MESSAGE)
        self.operations = operations
        self.masking = ErrorMasking()

    def on_operation(self) -> Iterator[None]:
        self.execution_context.parse_options["max_tokens"] = self.operations.max_tokens
        yield from super().on_operation()

    def on_parse(self) -> Iterator[None]:
        ctx = self.execution_context
        ctx.parse_options.update(STRICT_GRAMMAR)  # type: ignore[typeddict-item]
        try:
            ctx.graphql_document = self.operations.documents.parse(ctx.query)  # type: ignore[arg-type]
        except GraphQLError:
            # Parsed again by Strawberry's parse step (bounded by max_tokens), which
            # reports it through the extensions; raised from this hook it would not be.
            ctx.graphql_document = None
        yield

    def on_validate(self) -> Iterator[None]:
        ctx = self.execution_context
        assert ctx.graphql_document is not None
        # Set, graphql-core's validation is skipped (Strawberry's ``_run_validation``).
        ctx.pre_execution_errors = list(
            self.operations.documents.validate(ctx.query, ctx.graphql_document)
        )
        yield

    async def on_execute(self) -> AsyncIterator[None]:
        self.masking.executing = True
        ctx = self.execution_context
        kind = ctx.operation_type
        _watch_commits(kind)
        await before_operation(ctx.context, kind)
        yield
        await after_operation(ctx.context, kind)

    def _process_result(self, result: object) -> None:
        # Strawberry's version pays a runtime-checkable Protocol's isinstance per event.
        errors = getattr(result, "errors", None)
        if errors:
            result.errors = self.masking.errors(errors)  # type: ignore[attr-defined]
