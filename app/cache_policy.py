"""HTTP caching of GraphQL reads over GET (and HEAD, the same without a body):

- signed in (an ``Authorization`` header): ``Cache-Control: private, no-store``;
- anonymous, a query without errors: ``public, max-age=N``, N the smallest hint of the
  fields it reads (:func:`max_age`), else ``no-store``;
- every GET answer: ``Vary: Accept, Authorization`` and a weak ``ETag`` of the body
  (``If-None-Match`` naming it answers ``304 Not Modified``).
"""

from __future__ import annotations

import hashlib

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLSchema,
    OperationDefinitionNode,
    OperationType,
    TypeInfo,
    TypeInfoVisitor,
    Visitor,
    get_named_type,
    is_leaf_type,
    visit,
)

from schema.cache_hints import FIELD_HINTS, TYPE_HINTS, VIEWER

#: What a response that no cache may keep says.
NO_STORE = "no-store"
PRIVATE = "private, no-store"
VARY = "Accept, Authorization"


class _Hints(Visitor):
    def __init__(self, type_info: TypeInfo) -> None:
        super().__init__()
        self.type_info = type_info
        self.max_age: int | None = None  # None: no field set a limit yet
        self.spreads: set[str] = set()

    def limit(self, seconds: int) -> None:
        self.max_age = seconds if self.max_age is None else min(self.max_age, seconds)

    def enter_fragment_spread(self, node: FragmentSpreadNode, *_: object) -> None:
        self.spreads.add(node.name.value)

    def enter_field(self, node: FieldNode, *_: object) -> object:
        name = node.name.value
        if name == "__typename":
            return None
        parent = self.type_info.get_parent_type()
        field_type = self.type_info.get_type()
        if parent is None or field_type is None or name.startswith("__"):
            self.limit(0)  # introspection, or a field the schema lacks
            return None
        hint = FIELD_HINTS.get((parent.name, name))
        if hint == VIEWER:
            self.limit(0)
        elif isinstance(hint, int):
            self.limit(hint)
        else:
            named = get_named_type(field_type)
            if not is_leaf_type(named):
                self.limit(TYPE_HINTS.get(named.name, 0))
        return None


def max_age(schema: GraphQLSchema, document: DocumentNode, operation_name: str | None) -> int:
    """Seconds a shared cache may keep an anonymous answer of operation ``operation_name`` (None:
    the only one): the smallest hint of the fields it reads; 0 for a mutation or subscription, a
    field that depends on the viewer, or no such operation."""
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    chosen = [
        op
        for op in operations
        if operation_name is None or (op.name is not None and op.name.value == operation_name)
    ]
    if len(chosen) != 1 or chosen[0].operation is not OperationType.QUERY:
        return 0
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    type_info = TypeInfo(schema)
    hints = _Hints(type_info)
    visit(chosen[0], TypeInfoVisitor(type_info, hints))
    done: set[str] = set()
    while pending := hints.spreads - done:
        name = pending.pop()
        done.add(name)
        if name in fragments:
            visit(fragments[name], TypeInfoVisitor(type_info, hints))
    return max(hints.max_age or 0, 0)


def cache_control(signed_in: bool, seconds: int) -> str:
    """The ``Cache-Control`` of a GET answer without errors."""
    if signed_in:
        return PRIVATE
    return f"public, max-age={seconds}" if seconds > 0 else NO_STORE


def etag(body: bytes) -> str:
    """A weak validator of a response body (weak: gzip gives the same answer other bytes)."""
    return f'W/"{hashlib.blake2b(body, digest_size=16).hexdigest()}"'


def matches(if_none_match: str | None, tag: str) -> bool:
    """Whether an ``If-None-Match`` value names ``tag`` (weak comparison, RFC 9110)."""
    if not if_none_match:
        return False
    if if_none_match.strip() == "*":
        return True
    opaque = tag.removeprefix("W/")
    return any(t.strip().removeprefix("W/") == opaque for t in if_none_match.split(","))
