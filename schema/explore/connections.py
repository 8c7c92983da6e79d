"""``Query.explore``: the explore connection and its cursors (docs/api/explore.md "Explore").

A cursor is opaque (schema.pagination's :func:`~schema.pagination.pack`):
``x1:<a|i|v>:<window id>:<offset>``, the kind filter (all, IMAGE, VIDEO), the frozen
window and the offset of the next post in it. The posts are checked and hydrated like
the home feed's (domain.feed.post_filter, with rules.in_explore).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence

from graphql import GraphQLError

from domain.db import utcnow
from domain.errors import StoreError
from domain.explore.read_explore import Kind, read_explore
from domain.explore.trending_hashtags import trending_hashtags
from domain.feed.post_filter import PostFilter
from domain.feed.read_ranked_feed import Position, RankedWindowExpiredError
from domain.feed.timelines import Entry
from domain.visibility import rules
from schema import visibility
from schema.context import Info
from schema.explore.hashtags import Hashtag
from schema.explore.types import ExploreConnection, TrendingHashtag
from schema.feed.connections import page_posts
from schema.feed.selection import wanted
from schema.media.types import MediaKind
from schema.pagination import bad_cursor, check_first, pack, page_info, unpack
from schema.posts.types import PostEdge

#: The page size of ``trendingHashtags`` when ``first`` is omitted or null.
TRENDING_HASHTAGS = 10

_PREFIX = "x1:"
_WINDOW_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")
_KINDS: dict[Kind, str] = {None: "a", "image": "i", "video": "v"}
_NO_ENTRY = Entry(0, uuid.UUID(int=0))


def encode_explore_cursor(kind: Kind, position: Position) -> str:
    """The opaque cursor of an explore position."""
    return pack(f"{_PREFIX}{_KINDS[kind]}:{position.window_id}:{position.offset}")


def decode_explore_cursor(cursor: str, kind: Kind) -> Position:
    """Inverse of :func:`encode_explore_cursor`; a BAD_USER_INPUT GraphQLError for
    anything it never issues, a cursor of another ``kind`` among them."""
    try:
        _, rest = unpack(cursor, _PREFIX)
        k, window_id, raw = rest.split(":")
        offset = int(raw)
        if (
            k != _KINDS[kind]
            or not _WINDOW_ID.fullmatch(window_id)
            or not 0 < offset <= 1_000_000
            or raw != str(offset)
        ):
            raise ValueError(rest)
    except ValueError:
        raise bad_cursor("The 'after' cursor is not a cursor of this explore feed.") from None
    return Position(window_id, offset, _NO_ENTRY)


async def explore_connection(
    info: Info, first: int | None, after: str | None, kind: MediaKind | None
) -> ExploreConnection:
    """``Query.explore`` (see domain.explore.read_explore). Raises UNAUTHENTICATED without
    a viewer, BAD_USER_INPUT for bad arguments, CURSOR_EXPIRED for a window that is gone,
    SERVICE_UNAVAILABLE without a working Redis."""
    ctx = info.context
    viewer = ctx.require_viewer()
    size = check_first(first, ctx.limits.max_page_size)
    k: Kind = None if kind is None else ("video" if kind is MediaKind.VIDEO else "image")
    position = decode_explore_cursor(after, k) if after else None
    stores = ctx.feed_stores()  # SERVICE_UNAVAILABLE without a configured Redis
    check = PostFilter(ctx.engine, viewer, wanted(info), rules.in_explore)
    try:
        page = await read_explore(
            ctx.engine,
            stores,
            ctx.feed_config,
            viewer,
            kind=k,
            first=size,
            after=position,
            visible=check,
            now=utcnow(),
        )
    except RankedWindowExpiredError:
        raise GraphQLError(
            "This explore cursor expired: read explore again from the top (no 'after').",
            extensions={"code": "CURSOR_EXPIRED"},
        ) from None
    except StoreError:
        raise _unavailable() from None
    posts = page_posts(info, check, [e for e, _ in page.items])
    edges = [
        PostEdge.of_hydrated(h, encode_explore_cursor(k, pos))
        for h, (_, pos) in zip(posts, page.items, strict=True)
    ]
    return ExploreConnection(
        edges=edges, page_info=page_info([e.cursor for e in edges], page.has_next, after)
    )


def _unavailable() -> GraphQLError:
    return GraphQLError(
        "Explore is unavailable: the feed store (Redis) does not answer.",
        extensions={"code": "SERVICE_UNAVAILABLE"},
    )


async def trending_hashtags_list(info: Info, first: int | None) -> list[TrendingHashtag]:
    """``Query.trendingHashtags`` (see domain.explore.trending_hashtags). Raises
    UNAUTHENTICATED without a viewer, BAD_USER_INPUT for a bad ``first``,
    SERVICE_UNAVAILABLE without a working Redis."""
    ctx = info.context
    ctx.require_viewer()
    size = check_first(first, ctx.limits.max_page_size, TRENDING_HASHTAGS)
    stores = ctx.feed_stores()

    async def visible(ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, bool]:
        found = await visibility.explore_posts(ctx, ids)
        return {pid: h.followed for pid, h in found.items()}

    try:
        trends = await trending_hashtags(
            ctx.engine, stores, ctx.feed_config, first=size, visible=visible, now=utcnow()
        )
    except StoreError:
        raise _unavailable() from None
    return [
        TrendingHashtag(
            name=t.name,
            hashtag=Hashtag.named(t.name),
            post_count=t.posts,
            engagement_count=t.engagements,
        )
        for t in trends
    ]
