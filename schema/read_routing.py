"""Where a GraphQL operation's reads go (docs/operations/scaling.md "Scaling out", Read replicas).

Queries read from the engine the context's :class:`ReadSource` picks (a replica, or the
primary for a viewer who just wrote); mutations and subscriptions stay on the primary,
and a mutation marks its viewer so that their next reads see what it wrote. Two calls
per operation, around its execution (app/operation.py makes them on every path; no
per-field cost); the context's ``engine`` is what every resolver and dataloader
already reads from.
"""

from __future__ import annotations

import uuid
from typing import Any, Protocol

from graphql import GraphQLError
from sqlalchemy.ext.asyncio import AsyncEngine
from strawberry.types.graphql import OperationType


class ReadSource(Protocol):
    """Picks a query's read engine and hears of writes (``app.database.ReadRouting``)."""

    async def engine_for(self, viewer: uuid.UUID | None) -> AsyncEngine: ...

    async def wrote(self, viewer: uuid.UUID) -> None: ...


async def before_operation(ctx: Any, kind: OperationType) -> None:
    """Before a query runs, point ``ctx.engine`` at the engine its reads should use
    (nothing without a read source: no replicas configured)."""
    reads: ReadSource | None = getattr(ctx, "reads", None)
    # HTTP only: a socket's context is shared by its operations (each runs in a copy
    # made after this call), so queries over WebSocket stay on the primary.
    if (
        reads is not None
        and kind is OperationType.QUERY
        and getattr(ctx, "connection_params", None) is None
    ):
        ctx.engine = await reads.engine_for(_viewer(ctx))
        ctx.__dict__.pop("loaders", None)  # dataloaders read from the chosen engine


async def after_operation(ctx: Any, kind: OperationType) -> None:
    """After a mutation ran, tell the read source who wrote: the viewer, or the account
    a signUp/logIn signed in (its token's first reads must find the new account and
    whatever the mutation wrote, on a replica that has not replayed it yet)."""
    reads: ReadSource | None = getattr(ctx, "reads", None)
    if reads is not None and kind is OperationType.MUTATION:
        for who in {_viewer(ctx), getattr(ctx, "signed_in", None)}:
            if who is not None:
                await reads.wrote(who)


def _viewer(ctx: Any) -> uuid.UUID | None:
    try:
        return ctx.viewer_id
    except GraphQLError:  # a bad token: the resolvers report it
        return None
