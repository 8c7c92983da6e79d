"""``viewer.blockedUsers`` and ``viewer.mutedUsers``: one statement for the page, one
batch for the accounts."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Literal

from strawberry import relay

from domain.social.queries import relation_list
from schema import visibility
from schema.context import Info
from schema.mutes.types import (
    BlockedUserConnection,
    BlockedUserEdge,
    MutedUserConnection,
    MutedUserEdge,
)
from schema.pagination import Window, cursor_encoder, window_info
from schema.refs import UserRef, user_node


async def _relation_page(
    info: Info, kind: Literal["blocked", "muted"], user_id: uuid.UUID, window: Window
) -> tuple[list[tuple[str, UserRef, dt.datetime]], relay.PageInfo]:
    ctx = info.context
    of = (kind, user_id)
    async with ctx.engine.connect() as conn:
        page = await relation_list(
            conn,
            kind,
            user_id,
            first=window.size,
            after=window.position,
            backward=window.backward,
        )
    # Reached from one's own list: the profile rule (a blocked account is shown here).
    records = await visibility.accounts(ctx, [e.user_id for e in page.edges])
    encode = cursor_encoder(of)
    edges = [
        (encode(e.position), user_node(rec), e.position[0])
        for e, rec in zip(page.edges, records, strict=True)
        if rec is not None
    ]
    return edges, window_info([c for c, _, _ in edges], page.has_next, window)


async def blocked_users_connection(
    info: Info, user_id: uuid.UUID, window: Window
) -> BlockedUserConnection:
    """``viewer.blockedUsers``: one statement for the page, one batch for the accounts."""
    edges, info_ = await _relation_page(info, "blocked", user_id, window)
    return BlockedUserConnection(
        edges=[BlockedUserEdge(cursor=c, node=n, blocked_at=t) for c, n, t in edges],
        page_info=info_,
    )


async def muted_users_connection(
    info: Info, user_id: uuid.UUID, window: Window
) -> MutedUserConnection:
    """``viewer.mutedUsers``: one statement for the page, one batch for the accounts."""
    edges, info_ = await _relation_page(info, "muted", user_id, window)
    return MutedUserConnection(
        edges=[MutedUserEdge(cursor=c, node=n, muted_at=t) for c, n, t in edges],
        page_info=info_,
    )
