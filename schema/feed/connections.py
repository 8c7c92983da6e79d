"""``viewer.feed`` in its default order (RECENT): the hybrid home feed, newest first."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from domain.feed.hydration import HydratedPost
from domain.feed.read_feed import read_home_feed
from domain.feed.timelines import Entry
from schema import visibility
from schema.context import Info
from schema.feed.selection import wanted
from schema.feed.types import FeedConnection
from schema.pagination import check_page, encode_cursor, page_info
from schema.posts.types import PostEdge


async def home_feed_connection(info: Info, first: int, after: str | None) -> FeedConnection:
    """``viewer.feed``: the hybrid home feed (see domain.feed.read_feed), each round of
    candidates hydrated in one statement (schema.visibility.home_feed_posts). Raises
    UNAUTHENTICATED without a viewer, BAD_USER_INPUT for bad arguments."""
    ctx = info.context
    viewer = ctx.require_viewer()
    of = ("feed", viewer)
    position = check_page(first, after, ctx.limits.max_page_size, of)
    what = wanted(info)
    kept: dict[uuid.UUID, HydratedPost] = {}

    async def visible(entries: Sequence[Entry]) -> list[bool]:
        found = await visibility.home_feed_posts(ctx, [e.post_id for e in entries], what)
        kept.update(found)
        return [e.post_id in found for e in entries]

    page = await read_home_feed(
        ctx.engine,
        ctx.feed_stores(),
        ctx.feed_config,
        viewer,
        first=first,
        before=Entry.of(*position) if position else None,
        visible=visible,
        pull_authors=ctx.loaders.followed_pull_authors,
    )
    posts = [kept[e.post_id] for e in page.entries]
    edges = [
        PostEdge.of_hydrated(h, encode_cursor((h.post.created_at, h.post.id), of)) for h in posts
    ]
    return FeedConnection(
        edges=edges, page_info=page_info([e.cursor for e in edges], page.has_next, after)
    )
