"""Lazy references to the two node types that every area reaches: ``User`` and ``Post``.

``schema/`` is split by area, and the areas import each other one way only
(docs/architecture/README.md, "Code layout"): ``users`` on top, since a User's fields
reach every area's lists, ``posts`` above ``engagement``, the shared modules (context,
errors, ids, pagination, loaders, visibility, this one) at the bottom. A field of a
lower area that returns a node of a higher one (a Comment's author, a like's User, a
Comment's Post) names it here: its annotation through Strawberry's lazy type
(:data:`UserRef`,
:data:`PostRef`), its object through :func:`user_node` or :func:`post_node`, which
find the class the first time they run. So no module imports one above it: the
schema has no import cycle and no function-level import.

Mypy cannot see through a lazy annotation; the two names below are the only place
where it takes a node type on trust (it types them as ``Any``).
"""

from __future__ import annotations

import functools
from typing import Annotated, Any

import strawberry
from graphql import GraphQLError
from strawberry.types.lazy_type import LazyType

from domain.identity.queries import UserRecord
from domain.posts.queries import PostRecord
from schema import visibility
from schema.context import Info
from schema.loaders import UserCounts

UserRef = Annotated["User", strawberry.lazy("schema.users.types")]  # type: ignore[name-defined]  # noqa: F821
PostRef = Annotated["Post", strawberry.lazy("schema.posts.types")]  # type: ignore[name-defined]  # noqa: F821


@functools.cache
def _node_class(name: str, module: str) -> Any:
    # Strawberry's own resolution of a lazy type (it imports the module on first use;
    # by the time a resolver runs, the schema has imported every area).
    return LazyType(name, module).resolve_type()


def user_node(record: UserRecord, counts: UserCounts | None = None) -> UserRef:
    """The ``User`` object of an account record (and its counts, when they were read
    with it: the count fields then answer without a dataloader)."""
    return _node_class("User", "schema.users.types").from_record(record, counts=counts)


def post_node(record: PostRecord) -> PostRef:
    """The ``Post`` object of a post record."""
    return _node_class("Post", "schema.posts.types").from_record(record)


@strawberry.type
class BothSides:
    """The success payload of a mutation between the viewer and another account: both
    accounts, read after the change, so a normalised cache refreshes both (the viewer's
    ``followingCount``, the other's ``followerCount``, their flags)."""

    user: UserRef

    @strawberry.field(description="You, after the change (your counts and lists as they are now).")
    async def viewer(self, info: Info) -> UserRef:
        ctx = info.context
        (rec,) = await visibility.accounts(ctx, [ctx.viewer_id])
        if rec is None:  # signed out or banned during the request
            raise GraphQLError(
                "Your account is not available.", extensions={"code": "UNAUTHENTICATED"}
            )
        return user_node(rec)
