"""Mute and the viewer's lists of blocked and muted accounts (README "Mute and blocked
list"): the mute/unmute payloads and result unions, and the two connections."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Annotated, Literal

import strawberry
from strawberry import relay

from domain.social.queries import relation_list
from schema import visibility
from schema.errors import CannotMuteSelfError, NotFoundError, ValidationError
from schema.pagination import check_first, decode_cursor, encode_cursor, page_info
from schema.users import Info, User


@strawberry.type(
    description="`user` is muted: their posts stay out of your home feed and their "
    "notifications out of yours (what they notified you of is removed); you still follow "
    "them, and nothing shows on their side. Also when they already were."
)
class MuteSuccess:
    user: User


@strawberry.type(description="`user` is no longer muted (also when they were not).")
class UnmuteSuccess:
    user: User


MuteResult = Annotated[
    MuteSuccess | ValidationError | NotFoundError | CannotMuteSelfError,
    strawberry.union("MuteResult"),
]
UnmuteResult = Annotated[
    UnmuteSuccess | ValidationError | NotFoundError | CannotMuteSelfError,
    strawberry.union("UnmuteResult"),
]


@strawberry.type(description="An account you blocked; the cursor is the block's position.")
class BlockedUserEdge:
    cursor: str
    node: User
    blocked_at: dt.datetime


@strawberry.type(description="The accounts you blocked, newest first (Relay connection).")
class BlockedUserConnection:
    edges: list[BlockedUserEdge]
    page_info: relay.PageInfo


@strawberry.type(description="An account you muted; the cursor is the mute's position.")
class MutedUserEdge:
    cursor: str
    node: User
    muted_at: dt.datetime


@strawberry.type(description="The accounts you muted, newest first (Relay connection).")
class MutedUserConnection:
    edges: list[MutedUserEdge]
    page_info: relay.PageInfo


async def _relation_page(
    info: Info, kind: Literal["blocked", "muted"], user_id: uuid.UUID, first: int, after: str | None
):
    ctx = info.context
    check_first(first, ctx.limits.max_page_size)
    position = decode_cursor(after) if after else None
    async with ctx.engine.connect() as conn:
        page = await relation_list(conn, kind, user_id, first=first, after=position)
    # Reached from one's own list: the profile rule (a blocked account is shown here).
    records = await visibility.accounts(ctx, [e.user_id for e in page.edges])
    edges = [
        (encode_cursor(e.position), User.from_record(rec), e.position[0])
        for e, rec in zip(page.edges, records, strict=True)
        if rec is not None
    ]
    return edges, page_info([c for c, _, _ in edges], page.has_next, after)


async def blocked_users_connection(
    info: Info, user_id: uuid.UUID, first: int, after: str | None
) -> BlockedUserConnection:
    """``viewer.blockedUsers``: one statement for the page, one batch for the accounts."""
    edges, info_ = await _relation_page(info, "blocked", user_id, first, after)
    return BlockedUserConnection(
        edges=[BlockedUserEdge(cursor=c, node=n, blocked_at=t) for c, n, t in edges],
        page_info=info_,
    )


async def muted_users_connection(
    info: Info, user_id: uuid.UUID, first: int, after: str | None
) -> MutedUserConnection:
    """``viewer.mutedUsers``: one statement for the page, one batch for the accounts."""
    edges, info_ = await _relation_page(info, "muted", user_id, first, after)
    return MutedUserConnection(
        edges=[MutedUserEdge(cursor=c, node=n, muted_at=t) for c, n, t in edges],
        page_info=info_,
    )
