"""``Hashtag``: a tag's posts, newest first or ranked for the viewer the way explore
ranks (docs/api/explore.md "Hashtags ranked").

A ranked cursor is opaque: ``h1:<list tag>:w:<window id>:<offset>`` in the frozen
window, ``h1:<list tag>:t:<score>:<post id hex>`` past it (the list tag names the
hashtag, so another tag's cursor is refused).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Annotated, Self

import strawberry
from graphql import GraphQLError
from strawberry import relay

from domain.db import utcnow
from domain.engagement.hashtags import tag_named
from domain.engagement.queries import hashtag_posts_page
from domain.errors import StoreError
from domain.explore.read_hashtag import read_ranked_hashtag
from domain.feed.read_ranked_feed import Position, RankedWindowExpiredError
from domain.feed.timelines import Entry
from domain.posts.queries import PostRecord
from schema import visibility
from schema.context import Info
from schema.feed.types import FeedOrder
from schema.pagination import (
    BEFORE,
    DEFAULT_PAGE_SIZE,
    LAST,
    bad_cursor,
    check_first,
    check_window,
    list_tag,
    pack,
    page_info,
    unpack,
    window_info,
)
from schema.posts.types import Post, PostConnection, PostEdge, post_edges

_PREFIX = "h1:"
_WINDOW_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")
_NO_ENTRY = Entry(0, uuid.UUID(int=0))


def encode_hashtag_cursor(name: str, position: Position) -> str:
    """The opaque cursor of a ranked position in the hashtag ``name``'s posts."""
    tag = list_tag(("hashtag", name))
    if position.window_id is not None:
        return pack(f"{_PREFIX}{tag}:w:{position.window_id}:{position.offset}")
    return pack(f"{_PREFIX}{tag}:t:{position.entry.score}:{position.entry.post_id.hex}")


def decode_hashtag_cursor(cursor: str, name: str) -> Position:
    """Inverse of :func:`encode_hashtag_cursor`; BAD_USER_INPUT for anything it never
    issues for this hashtag."""
    try:
        _, rest = unpack(cursor, _PREFIX)
        tag, kind, a, b = rest.split(":")
        if tag != list_tag(("hashtag", name)):
            raise ValueError(rest)
        if kind == "w":
            offset = int(b)
            if not _WINDOW_ID.fullmatch(a) or not 0 < offset <= 1_000_000 or b != str(offset):
                raise ValueError(rest)
            return Position(a, offset, _NO_ENTRY)
        if kind == "t":
            score = int(a)
            if not 0 < score < 2**53 or len(b) != 32:
                raise ValueError(rest)
            return Position(None, 0, Entry(score, uuid.UUID(hex=b)))
        raise ValueError(rest)
    except ValueError:
        raise bad_cursor("The 'after' cursor is not a ranked cursor of this hashtag.") from None


async def ranked_hashtag_connection(
    info: Info, name: str, first: int | None, after: str | None
) -> PostConnection:
    """``Hashtag.posts(order: RANKED)``. Raises UNAUTHENTICATED without a viewer,
    BAD_USER_INPUT for bad arguments, CURSOR_EXPIRED for a window that is gone,
    SERVICE_UNAVAILABLE without a working Redis."""
    ctx = info.context
    viewer = ctx.require_viewer()
    size = check_first(first, ctx.limits.max_page_size)
    position = decode_hashtag_cursor(after, name) if after else None
    stores = ctx.feed_stores()
    kept: dict[uuid.UUID, PostRecord] = {}

    async def visible(entries: Sequence[Entry]) -> list[bool]:
        found = await visibility.posts(ctx, [e.post_id for e in entries])
        kept.update((r.id, r) for r in found if r is not None)
        return [r is not None for r in found]

    try:
        page = await read_ranked_hashtag(
            ctx.engine,
            stores,
            ctx.feed_config,
            viewer,
            name,
            first=size,
            after=position,
            visible=visible,
            now=utcnow(),
        )
    except RankedWindowExpiredError:
        raise GraphQLError(
            "This hashtag cursor expired: read the posts again from the top (no 'after').",
            extensions={"code": "CURSOR_EXPIRED"},
        ) from None
    except StoreError:
        raise GraphQLError(
            "Ranked hashtag posts are unavailable: the feed store (Redis) does not answer.",
            extensions={"code": "SERVICE_UNAVAILABLE"},
        ) from None
    edges = [
        PostEdge(cursor=encode_hashtag_cursor(name, pos), node=Post.from_record(kept[e.post_id]))
        for e, pos in page.items
    ]
    return PostConnection(
        edges=edges,
        page_info=page_info([e.cursor for e in edges], page.has_next, after),
        total_count=None,
    )


@strawberry.type(
    description="A hashtag: its folded name and its posts. Its id is stable (made from the "
    "name), so `node(id:)` gives it back."
)
class Hashtag(relay.Node):
    tag: relay.NodeID[str]
    name: str

    @classmethod
    def named(cls, tag: str) -> Self:
        """The Hashtag of a folded tag (domain.engagement.hashtags.tag_named)."""
        return cls(tag=tag, name=tag)

    @classmethod
    def resolve_nodes(  # type: ignore[override]
        cls, *, info: Info, node_ids: list[str], required: bool = False
    ) -> list[Self | None]:
        """Resolve ``node``/``nodes``: any name that is one folded tag (its posts list
        what the viewer may see), null otherwise."""
        return [cls.named(t) if tag_named(t) == t else None for t in node_ids]

    @strawberry.field(
        description="Posts with this tag that you may see: newest first (RECENT, the "
        "default), or RANKED for you (signed in) as explore ranks: engagement of the last "
        "24 hours, age (24-hour half-life), authors you engaged with, your media kind; "
        "frozen for the pages of one walk over the newest EXPLORE_WINDOW posts, then "
        "newest first."
    )
    async def posts(
        self,
        info: Info,
        first: int | None = DEFAULT_PAGE_SIZE,
        after: str | None = None,
        order: FeedOrder = FeedOrder.RECENT,
        last: Annotated[int | None, strawberry.argument(description=LAST)] = None,
        before: Annotated[str | None, strawberry.argument(description=BEFORE)] = None,
    ) -> PostConnection:
        if order is FeedOrder.RANKED:
            if last is not None or before is not None:
                raise GraphQLError(
                    "A RANKED order pages forward only ('first', 'after').",
                    extensions={"code": "BAD_USER_INPUT"},
                )
            return await ranked_hashtag_connection(info, self.name, first, after)
        ctx = info.context
        of = ("hashtag", self.name)
        window = check_window(first, after, last, before, ctx.limits.max_page_size, of)
        async with ctx.engine.connect() as conn:
            ids, more = await hashtag_posts_page(
                conn, self.name, first=window.size, after=window.position, backward=window.backward
            )
        edges = post_edges(await visibility.posts(ctx, ids), of)
        return PostConnection(
            edges=edges,
            page_info=window_info([e.cursor for e in edges], more, window),
            total_count=None,
        )
