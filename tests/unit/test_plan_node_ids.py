"""Relay node ids on the planned path (app/execution_plan.py): computed by the plan for a
node type that keeps Strawberry's defaults, through ``Node._id`` otherwise (an override,
a subclass instance, an id that is not a str), and the same response as graphql-core's."""

from __future__ import annotations

from typing import Any

import strawberry
from graphql import execute, parse
from graphql.execution.executor import Executor
from strawberry import relay

from app import execution_plan


@strawberry.type
class Thing(relay.Node):
    pk: relay.NodeID[str]


class SubThing(Thing):
    """A Thing whose ids Node._id takes from this class's ``resolve_id``."""

    @classmethod
    def resolve_id(cls, root: Any, *, info: Any) -> str:
        return f"sub-{root.pk}"


@strawberry.type
class Custom(relay.Node):
    pk: relay.NodeID[str]

    @classmethod
    def resolve_id(cls, root: Any, *, info: Any) -> str:
        return root.pk.upper()


@strawberry.type
class Query:
    @strawberry.field
    def things(self) -> list[Thing]:
        return [Thing(pk="1"), SubThing(pk="2"), Thing(pk=3), Thing(pk="é:x")]  # type: ignore[arg-type]

    @strawberry.field
    def custom(self) -> Custom:
        return Custom(pk="a")


SCHEMA = strawberry.Schema(query=Query)._schema
DOCUMENT = "{ things { id ... on Node { id } } custom { id } }"


async def test_node_ids_are_graphql_cores_and_computed_only_where_defaults_hold(
    monkeypatch,
) -> None:
    computed: list[str] = []
    node_id = execution_plan._node_id

    def counted(field_def, parent):
        read = node_id(field_def, parent)
        if read is None:
            if parent.fields.get("id") is field_def:
                computed.append(f"{parent.name}: Node._id")
            return None

        def counting(source):
            out = read(source)
            computed.append(f"{parent.name}: {out}")
            return out

        return counting

    monkeypatch.setattr(execution_plan, "_node_id", counted)
    document = parse(DOCUMENT)
    plan = execution_plan.build_plan(SCHEMA, document, None)
    assert plan is not None
    executor = Executor.build(SCHEMA, document)
    assert isinstance(executor, Executor)
    data, errors = await plan.run(executor)
    assert (data, errors) == (execute(SCHEMA, document).data, [])  # type: ignore[union-attr]
    gid = relay.GlobalID
    assert computed == [
        "Custom: Node._id",  # planned: Custom overrides resolve_id
        f"Thing: {gid('Thing', '1')}",
        "Thing: None",  # a SubThing
        "Thing: None",  # an int id
        f"Thing: {gid('Thing', 'é:x')}",
    ]
    assert data["custom"] == {"id": str(gid("Custom", "A"))}
    assert data["things"][1:3] == [
        {"id": str(gid("Thing", "sub-2"))},
        {"id": str(gid("Thing", "3"))},
    ]
