"""``viewer { feed(order: RANKED) }``: the ranked home feed connection and its cursors
(docs/architecture/home-feed.md "Home feed", Ranked order).

A cursor is opaque (schema.pagination's :func:`~schema.pagination.pack`):
``f1:w:<window id>:<offset>`` for a post of the frozen ranked window (the offset of the
next post in it), ``f1:c:<window id>:<score>:<post id hex>`` for a post of the
chronological continuation past that window, ``f1:t:<score>:<post id hex>`` for a post
of a walk without a window (its window could not be frozen: the chronological feed).
``after`` goes on from the cursor's place, ``before`` back from it through the same list
(domain.feed.read_ranked_feed_backward). The posts are checked and hydrated exactly as
the chronological page's (schema.feed.connections.home_feed_filter).
"""

from __future__ import annotations

import re
import uuid

from graphql import GraphQLError
from strawberry import relay

from domain.db import utcnow
from domain.feed.read_ranked_feed import Position, RankedWindowExpiredError, read_ranked_feed
from domain.feed.read_ranked_feed_backward import read_ranked_feed_backward
from domain.feed.timelines import Entry
from schema.context import Info
from schema.feed.connections import home_feed_filter, page_posts
from schema.feed.types import FeedConnection
from schema.pagination import bad_cursor, check_direction, pack, page_info, unpack
from schema.posts.types import PostEdge

_PREFIX = "f1:"
_WINDOW_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")


def encode_ranked_cursor(position: Position) -> str:
    """The opaque cursor of a ranked feed position."""
    if position.window_id is not None:
        return pack(f"{_PREFIX}w:{position.window_id}:{position.offset}")
    entry = f"{position.entry.score}:{position.entry.post_id.hex}"
    if position.walk is not None:
        return pack(f"{_PREFIX}c:{position.walk}:{entry}")
    return pack(f"{_PREFIX}t:{entry}")


def decode_ranked_cursor(cursor: str, arg: str = "after") -> Position:
    """Inverse of :func:`encode_ranked_cursor`; a BAD_USER_INPUT GraphQLError for
    anything it never issues (a RECENT cursor among them)."""
    try:
        _, rest = unpack(cursor, _PREFIX)
        kind, *parts = rest.split(":")
        if kind == "w":
            a, b = parts
            offset = int(b)
            if not _WINDOW_ID.fullmatch(a) or not 0 < offset <= 1_000_000 or b != str(offset):
                raise ValueError(rest)
            return Position(a, offset, Entry(0, uuid.UUID(int=0)))
        walk = None
        if kind == "c":
            walk, *parts = parts
            if not _WINDOW_ID.fullmatch(walk):
                raise ValueError(rest)
        elif kind != "t":
            raise ValueError(rest)
        a, b = parts
        score = int(a)
        if not 0 < score < 2**53 or len(b) != 32:
            raise ValueError(rest)
        return Position(None, 0, Entry(score, uuid.UUID(hex=b)), walk)
    except ValueError:
        raise bad_cursor(f"The '{arg}' cursor is not a cursor of the ranked feed.") from None


async def ranked_feed_connection(
    info: Info, first: int | None, after: str | None, last: int | None, before: str | None
) -> FeedConnection:
    """``viewer.feed(order: RANKED)`` (see domain.feed.read_ranked_feed, and
    domain.feed.read_ranked_feed_backward for ``last``/``before``). Raises
    BAD_USER_INPUT for bad arguments (schema.pagination.check_direction) or a cursor
    not of the ranked feed, CURSOR_EXPIRED for a window that is gone and
    SERVICE_UNAVAILABLE without a configured Redis."""
    ctx = info.context
    viewer = ctx.require_viewer()
    size, backward = check_direction(first, after, last, before, ctx.limits.max_page_size)
    cursor, arg = (before, "before") if backward else (after, "after")
    position = decode_ranked_cursor(cursor, arg) if cursor else None
    stores = ctx.feed_stores()  # SERVICE_UNAVAILABLE without a configured Redis
    check = home_feed_filter(info)
    pull_authors, now = ctx.loaders.followed_pull_authors, utcnow()
    try:
        if backward:
            page = await read_ranked_feed_backward(
                ctx.engine,
                stores,
                ctx.feed_config,
                viewer,
                last=size,
                before=position,
                visible=check,
                now=now,
                pull_authors=pull_authors,
                guesses=stores.pull_guesses,
            )
        else:
            page = await read_ranked_feed(
                ctx.engine,
                stores,
                ctx.feed_config,
                viewer,
                first=size,
                after=position,
                visible=check,
                now=now,
                pull_authors=pull_authors,
                guesses=stores.pull_guesses,
            )
    except RankedWindowExpiredError:
        raise GraphQLError(
            f"This ranked feed cursor expired: read the feed again from the top (no '{arg}').",
            extensions={"code": "CURSOR_EXPIRED"},
        ) from None
    posts = page_posts(info, check, [e for e, _ in page.items])
    edges = [
        PostEdge.of_hydrated(h, encode_ranked_cursor(pos))
        for h, (_, pos) in zip(posts, page.items, strict=True)
    ]
    cursors = [e.cursor for e in edges]
    if backward:
        info_ = relay.PageInfo(
            has_next_page=before is not None,
            has_previous_page=page.has_next,
            start_cursor=cursors[0] if cursors else None,
            end_cursor=cursors[-1] if cursors else None,
        )
    else:
        info_ = page_info(cursors, page.has_next, after)
    return FeedConnection(edges=edges, page_info=info_)
