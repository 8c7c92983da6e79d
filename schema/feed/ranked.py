"""``viewer { feed(order: RANKED) }``: the ranked home feed connection and its cursors
(docs/architecture/home-feed.md "Home feed", Ranked order).

A cursor is opaque (schema.pagination's :func:`~schema.pagination.pack`):
``f1:w:<window id>:<offset>`` for a post of the frozen ranked window (the offset of the
next post in it), ``f1:t:<score>:<post id hex>`` for a post of the chronological
continuation past the window. The posts are checked and hydrated exactly as the
chronological page's (schema.feed.connections.home_feed_filter).
"""

from __future__ import annotations

import re
import uuid

from graphql import GraphQLError

from domain.db import utcnow
from domain.feed.read_ranked_feed import Position, RankedWindowExpiredError, read_ranked_feed
from domain.feed.timelines import Entry
from schema.context import Info
from schema.feed.connections import home_feed_filter, page_posts
from schema.feed.types import FeedConnection
from schema.pagination import bad_cursor, check_first, pack, page_info, unpack
from schema.posts.types import PostEdge

_PREFIX = "f1:"
_WINDOW_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")


def encode_ranked_cursor(position: Position) -> str:
    """The opaque cursor of a ranked feed position."""
    if position.window_id is not None:
        return pack(f"{_PREFIX}w:{position.window_id}:{position.offset}")
    return pack(f"{_PREFIX}t:{position.entry.score}:{position.entry.post_id.hex}")


def decode_ranked_cursor(cursor: str) -> Position:
    """Inverse of :func:`encode_ranked_cursor`; a BAD_USER_INPUT GraphQLError for
    anything it never issues (a RECENT cursor among them)."""
    try:
        _, rest = unpack(cursor, _PREFIX)
        kind, a, b = rest.split(":")
        if kind == "w":
            offset = int(b)
            if not _WINDOW_ID.fullmatch(a) or not 0 < offset <= 1_000_000 or b != str(offset):
                raise ValueError(rest)
            return Position(a, offset, Entry(0, uuid.UUID(int=0)))
        if kind == "t":
            score = int(a)
            if not 0 < score < 2**53 or len(b) != 32:
                raise ValueError(rest)
            return Position(None, 0, Entry(score, uuid.UUID(hex=b)))
        raise ValueError(rest)
    except ValueError:
        raise bad_cursor("The 'after' cursor is not a cursor of the ranked feed.") from None


async def ranked_feed_connection(info: Info, first: int, after: str | None) -> FeedConnection:
    """``viewer.feed(order: RANKED)`` (see domain.feed.read_ranked_feed). Raises
    BAD_USER_INPUT for a malformed cursor, CURSOR_EXPIRED for a window that is gone and
    SERVICE_UNAVAILABLE without a configured Redis."""
    ctx = info.context
    viewer = ctx.require_viewer()
    check_first(first, ctx.limits.max_page_size)
    position = decode_ranked_cursor(after) if after else None
    stores = ctx.feed_stores()  # SERVICE_UNAVAILABLE without a configured Redis
    check = home_feed_filter(info)

    try:
        page = await read_ranked_feed(
            ctx.engine,
            stores,
            ctx.feed_config,
            viewer,
            first=first,
            after=position,
            visible=check,
            now=utcnow(),
            pull_authors=ctx.loaders.followed_pull_authors,
        )
    except RankedWindowExpiredError:
        raise GraphQLError(
            "This ranked feed cursor expired: read the feed again from the top (no 'after').",
            extensions={"code": "CURSOR_EXPIRED"},
        ) from None
    posts = page_posts(info, check, [e for e, _ in page.items])
    edges = [
        PostEdge.of_hydrated(h, encode_ranked_cursor(pos))
        for h, (_, pos) in zip(posts, page.items, strict=True)
    ]
    return FeedConnection(
        edges=edges, page_info=page_info([e.cursor for e in edges], page.has_next, after)
    )
