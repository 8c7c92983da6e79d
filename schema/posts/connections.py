"""``User.posts``: keyset pages of an author's live posts, newest first."""

from __future__ import annotations

import asyncio
import uuid

from domain.posts.queries import posts_of_author
from schema import visibility
from schema.context import Info
from schema.pagination import check_page, page_info
from schema.posts.types import PostConnection, post_edges


async def author_posts_connection(
    info: Info, author_id: uuid.UUID, first: int, after: str | None
) -> PostConnection:
    """``User.posts``: one statement for the page (primed into the post loader), one
    batch for visibility; ``totalCount`` is the author's live posts. Raises
    BAD_USER_INPUT for bad arguments."""
    ctx = info.context
    of = ("posts", author_id)
    position = check_page(first, after, ctx.limits.max_page_size, of)
    async with ctx.engine.connect() as conn:
        records, has_next = await posts_of_author(
            conn, author_id, first=first, after=position, unpublished=ctx.viewer_id == author_id
        )
    for r in records:
        ctx.loaders.post_by_id.prime(r.id, r)
    ok, counts = await asyncio.gather(
        visibility.visible_posts(ctx, records), ctx.loaders.counts_by_user_id.load(author_id)
    )
    edges = post_edges([r for r, keep in zip(records, ok, strict=True) if keep], of)
    return PostConnection(
        edges=edges,
        page_info=page_info([e.cursor for e in edges], has_next, after),
        total_count=counts.posts,
    )
