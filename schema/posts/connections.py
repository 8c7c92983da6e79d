"""``User.posts``: keyset pages of an author's live posts, newest first."""

from __future__ import annotations

import asyncio
import uuid

from domain.posts.queries import posts_of_author
from schema import visibility
from schema.context import Info
from schema.pagination import Window, window_info
from schema.posts.types import PostConnection, post_edges


async def author_posts_connection(
    info: Info, author_id: uuid.UUID, window: Window
) -> PostConnection:
    """``User.posts``: one statement for the page (primed into the post loader), one
    batch for visibility; ``totalCount`` is the author's live posts (``window`` is
    checked: schema.pagination.check_window)."""
    ctx = info.context
    of = ("posts", author_id)
    async with ctx.engine.connect() as conn:
        records, has_next = await posts_of_author(
            conn,
            author_id,
            first=window.size,
            after=window.position,
            unpublished=ctx.viewer_id == author_id,
            backward=window.backward,
        )
    for r in records:
        ctx.loaders.post_by_id.prime(r.id, r)
    ok, counts = await asyncio.gather(
        visibility.visible_posts(ctx, records), ctx.loaders.counts_by_user_id.load(author_id)
    )
    edges = post_edges([r for r, keep in zip(records, ok, strict=True) if keep], of)
    return PostConnection(
        edges=edges,
        page_info=window_info([e.cursor for e in edges], has_next, window),
        total_count=counts.posts,
    )
