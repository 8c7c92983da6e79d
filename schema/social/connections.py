"""``viewer.followRequests``: the pending requests to follow the viewer."""

from __future__ import annotations

import uuid

from domain.social.queries import follow_request_list
from schema import visibility
from schema.context import Info
from schema.pagination import Window, cursor_encoder, window_info
from schema.refs import user_node
from schema.social.types import FollowRequestConnection, FollowRequestEdge


async def follow_requests_connection(
    info: Info, target_id: uuid.UUID, window: Window
) -> FollowRequestConnection:
    """``viewer.followRequests``: keyset pages of the pending requests to ``target_id``
    (one statement for the page, one batch for the requesters; ``window``:
    schema.pagination.check_window)."""
    ctx = info.context
    of = ("followRequests", target_id)
    async with ctx.engine.connect() as conn:
        page = await follow_request_list(
            conn, target_id, first=window.size, after=window.position, backward=window.backward
        )
    records = await visibility.accounts(ctx, [e.user_id for e in page.edges], listed=True)
    encode = cursor_encoder(of)
    edges = [
        FollowRequestEdge(
            cursor=encode(e.position), node=user_node(rec), requested_at=e.position[0]
        )
        for e, rec in zip(page.edges, records, strict=True)
        if rec is not None
    ]
    return FollowRequestConnection(
        edges=edges,
        page_info=window_info([e.cursor for e in edges], page.has_next, window),
    )
