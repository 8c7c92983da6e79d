"""``Post.likes`` and ``Post.comments``: one statement for the page, one batch for what
its edges show."""

from __future__ import annotations

import asyncio
import uuid

from domain.engagement.queries import likers_page, top_comments_page
from schema import visibility
from schema.context import Info
from schema.engagement.types import (
    CommentConnection,
    LikeConnection,
    LikeEdge,
    comment_connection,
)
from schema.pagination import Window, cursor_encoder, window_info
from schema.refs import user_node


async def likes_connection(info: Info, post_id: uuid.UUID, window: Window) -> LikeConnection:
    """``Post.likes``: likers newest first, those listed for the viewer (no banned or
    deleted account, no block either way); ``totalCount`` is the post's likes as this
    viewer sees them, the same number (``window``: schema.pagination.check_window)."""
    ctx = info.context
    of = ("likes", post_id)
    async with ctx.engine.connect() as conn:
        rows, more = await likers_page(
            conn,
            post_id,
            first=window.size,
            after=window.position,
            viewer_id=ctx.viewer_id,
            backward=window.backward,
        )
    users, counts = await asyncio.gather(
        visibility.accounts(ctx, [u for u, _ in rows], listed=True),
        ctx.loaders.counts_by_post_id.load(post_id),
    )
    encode = cursor_encoder(of)
    edges = [
        LikeEdge(cursor=encode((liked_at, uid)), node=user_node(rec), liked_at=liked_at)
        for (uid, liked_at), rec in zip(rows, users, strict=True)
        if rec is not None
    ]
    return LikeConnection(
        edges=edges,
        page_info=window_info([e.cursor for e in edges], more, window),
        total_count=counts.likes,
    )


async def comments_connection(info: Info, post_id: uuid.UUID, window: Window) -> CommentConnection:
    """``Post.comments``: top-level comments oldest first, replies under each;
    ``totalCount`` is the post's ``commentCount`` as this viewer sees it (replies
    included) (``window``: schema.pagination.check_window)."""
    ctx = info.context
    of = ("comments", post_id)
    async with ctx.engine.connect() as conn:
        records, more = await top_comments_page(
            conn, post_id, first=window.size, after=window.position, backward=window.backward
        )
    return await comment_connection(info, records, more, window, of, counted_post=post_id)
