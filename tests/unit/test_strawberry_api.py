"""The members of Strawberry (and of graphql-core, whose version Strawberry pins) that
Roost overrides or reads still exist under the same names.

Strawberry is pinned to one minor version in pyproject.toml because Roost subclasses
its view, WebSocket handlers, schema, execution context and error masking. A rename
upstream would not break an override: it would silently stop being called (errors
unmasked, sockets unguarded). When these fail after an upgrade, port the override to
the new member, then move the pin."""

from __future__ import annotations

import inspect

import graphql.execution.executor as graphql_executor
import pytest
from strawberry.http.async_base_view import AsyncBaseHTTPView
from strawberry.schema.schema import Schema
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
)
from strawberry.subscriptions.protocols.graphql_ws.handlers import BaseGraphQLWSHandler

from app.asgi import RoostGraphQL
from app.graphql import RoostExecutionContext, RoostSchema
from app.http_view import GuardedGraphQLView
from app.operation import RoostOperation
from app.ws_guards import GuardedTransportWSHandler, GuardedWSHandler

#: (Roost's class, a member it overrides): the member must be defined by one of the
#: class's Strawberry or graphql-core bases. Private ones (``_x``) are the fragile part.
OVERRIDES = [
    (RoostOperation, "_process_result"),
    (RoostOperation, "on_operation"),
    (RoostOperation, "on_execute"),
    (RoostOperation, "on_parse"),
    (RoostOperation, "on_validate"),
    (RoostSchema, "execute"),
    (RoostSchema, "process_errors"),
    (RoostExecutionContext, "build_per_event_executor"),
    (RoostExecutionContext, "execute_operation"),
    (RoostGraphQL, "execute_single"),
    (RoostGraphQL, "get_context"),
    (RoostGraphQL, "is_websocket_origin_allowed"),
    (RoostGraphQL, "on_ws_connect"),
    (RoostGraphQL, "render_graphql_ide"),
    (RoostGraphQL, "graphql_transport_ws_handler_class"),
    (RoostGraphQL, "graphql_ws_handler_class"),
    (GuardedTransportWSHandler, "_get_pre_execution_close_reason"),
    (GuardedTransportWSHandler, "_send_result_stream"),
    (GuardedTransportWSHandler, "handle_connection_init"),
    (GuardedTransportWSHandler, "handle_subscribe"),
    (GuardedTransportWSHandler, "handle_task_exception"),
    (GuardedTransportWSHandler, "send_message"),
    (GuardedTransportWSHandler, "shutdown"),
    (GuardedWSHandler, "cleanup"),
    (GuardedWSHandler, "handle_async_results"),
    (GuardedWSHandler, "handle_connection_init"),
    (GuardedWSHandler, "handle_start"),
    (GuardedWSHandler, "send_message"),
]


def _upstream_bases(cls: type) -> list[type]:
    return [b for b in cls.__mro__[1:] if b.__module__.split(".")[0] in ("strawberry", "graphql")]


@pytest.mark.parametrize(
    ("cls", "member"), OVERRIDES, ids=[f"{c.__name__}.{m}" for c, m in OVERRIDES]
)
def test_each_override_still_overrides_an_upstream_member(cls: type, member: str) -> None:
    assert member in vars(cls), f"Roost's {cls.__name__} no longer defines {member}"
    owners = [b for b in _upstream_bases(cls) if member in vars(b)]
    assert owners, f"no Strawberry/graphql-core base of {cls.__name__} defines {member} any more"


def test_the_list_holds_every_override_roost_makes() -> None:
    """A new override of an upstream member is added to OVERRIDES (so the test above
    watches it); Strawberry's own generated members are not Roost's."""
    listed = set(OVERRIDES)
    classes = {c for c, _ in OVERRIDES}
    generated = {"_abc_impl", "_is_protocol"}
    for cls in classes:
        upstream = {m for b in _upstream_bases(cls) for m in vars(b)}
        for member in vars(cls):
            if member.startswith("__") or member in generated or member not in upstream:
                continue
            assert (cls, member) in listed, f"{cls.__name__}.{member} overrides upstream: list it"


def test_private_attributes_roost_reads_are_still_set_upstream() -> None:
    """RoostSchema hands Strawberry's graphql-core schema (``Schema._schema``) to its
    operation path; RoostExecutionContext releases ``async_helpers`` after a result."""
    assert "self._schema" in inspect.getsource(Schema.__init__)
    assert "self.async_helpers" in inspect.getsource(graphql_executor)


def test_graphql_core_executor_still_keeps_the_per_event_memo_roost_resets() -> None:
    """RoostExecutionContext.build_per_event_executor replaces ``_relevant_sub_fields``
    on each event's executor (graphql-core 3.3 shares it between events: a leak)."""
    source = inspect.getsource(graphql_executor)
    assert "self._relevant_sub_fields" in source


def test_the_websocket_handlers_members_roost_calls_still_exist() -> None:
    """The result loops of app/ws_guards.py call Strawberry's pre-execution error
    handling and the legacy handler's bookkeeping."""
    assert callable(BaseGraphQLTransportWSHandler._handle_pre_execution_error)
    source = inspect.getsource(BaseGraphQLWSHandler)
    assert "self.subscriptions" in source and "self.tasks" in source


def test_the_multipart_part_hook_roost_overrides_still_exists() -> None:
    """GuardedGraphQLView (a mixin, so not in OVERRIDES) codes the errors of later
    incremental parts in ``_process_stream_result``; RoostGraphQL must reach it."""
    assert "_process_stream_result" in vars(AsyncBaseHTTPView)
    owner = next(c for c in RoostGraphQL.__mro__ if "_process_stream_result" in vars(c))
    assert owner is GuardedGraphQLView
