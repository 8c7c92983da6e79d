"""The ``Post`` node, post connections, the home feed connection, and the post mutations'
inputs, payloads and result unions."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from collections.abc import Sequence
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Self

import strawberry
from strawberry import relay

from domain.feed.read_feed import read_home_feed
from domain.feed.timelines import Entry, time_of
from domain.posts.queries import PostRecord, posts_of_author
from schema import visibility
from schema.context import Context
from schema.errors import NotFoundError, NotPostAuthorError, ValidationError
from schema.ids import parse_node_ids
from schema.pagination import (
    DEFAULT_PAGE_SIZE,
    check_first,
    decode_entry_cursor,
    encode_entry_cursor,
    page_info,
)

if TYPE_CHECKING:
    from schema.engagement import CommentConnection, LikeConnection
    from schema.users import User

Info = strawberry.Info[Context, None]


@strawberry.enum
class MediaKind(Enum):
    IMAGE = "image"
    VIDEO = "video"


@strawberry.type(description="A media file attached to a post.")
class Media:
    url: str
    kind: MediaKind


@strawberry.type(description="A post: a caption and up to 10 media files.")
class Post(relay.Node):
    pk: relay.NodeID[str]
    caption: str
    media: list[Media]
    created_at: dt.datetime
    post_id: strawberry.Private[uuid.UUID]
    author_id: strawberry.Private[uuid.UUID]

    @classmethod
    def from_record(cls, rec: PostRecord) -> Self:
        """Build the GraphQL object from a domain record."""
        return cls(
            pk=str(rec.id),
            caption=rec.caption,
            media=[Media(url=m["url"], kind=MediaKind(m["kind"])) for m in rec.media],
            created_at=rec.created_at,
            post_id=rec.id,
            author_id=rec.author_id,
        )

    @strawberry.field(description="Who wrote the post.")
    async def author(self, info: Info) -> Annotated[User, strawberry.lazy("schema.users")]:
        from schema.users import User as UserType

        rec = await info.context.loaders.user_by_id.load(self.author_id)
        return UserType.from_record(rec)

    @strawberry.field(
        description="Likes, exact, O(1) to read: as many as `likes` lists for you (no "
        "banned or deleted account, nobody on the other side of a block)."
    )
    async def like_count(self, info: Info) -> int:
        return (await info.context.loaders.counts_by_post_id.load(self.post_id)).likes

    @strawberry.field(
        description="Live comments and replies, exact, O(1) to read: as many as `comments` "
        "and their `replies` list for you."
    )
    async def comment_count(self, info: Info) -> int:
        return (await info.context.loaders.counts_by_post_id.load(self.post_id)).comments

    @strawberry.field(description="Whether the viewer likes this post (false when anonymous).")
    async def viewer_has_liked(self, info: Info) -> bool:
        loader = info.context.loaders.viewer_liked
        return bool(loader and await loader.load(self.post_id))

    @strawberry.field(description="Who liked this post, newest first.")
    async def likes(
        self, info: Info, first: int = DEFAULT_PAGE_SIZE, after: str | None = None
    ) -> Annotated[LikeConnection, strawberry.lazy("schema.engagement")]:
        from schema.engagement import likes_connection

        return await likes_connection(info, self.post_id, first, after)

    @strawberry.field(description="Top-level comments, oldest first, each with its replies.")
    async def comments(
        self, info: Info, first: int = DEFAULT_PAGE_SIZE, after: str | None = None
    ) -> Annotated[CommentConnection, strawberry.lazy("schema.engagement")]:
        from schema.engagement import comments_connection

        return await comments_connection(info, self.post_id, first, after)

    @classmethod
    async def resolve_nodes(  # type: ignore[override]
        cls, *, info: Info, node_ids: list[str], required: bool = False
    ) -> list[Self | None]:
        """Resolve ``node``/``nodes``: posts the viewer may see, else null."""
        records = await visibility.posts(info.context, parse_node_ids(node_ids))
        return [cls.from_record(r) if r else None for r in records]


@strawberry.type(description="A post in a list; the cursor is its (time, id) position.")
class PostEdge:
    cursor: str
    node: Post


@strawberry.type(description="A page of posts, newest first (Relay connection).")
class PostConnection:
    edges: list[PostEdge]
    page_info: relay.PageInfo
    total_count: int | None = strawberry.field(
        description="All posts of the list, exact, where that is O(1) (a user's posts)."
    )


@strawberry.type(description="A page of the home feed, newest first (Relay connection).")
class FeedConnection:
    edges: list[PostEdge]
    page_info: relay.PageInfo


async def author_posts_connection(
    info: Info, author_id: uuid.UUID, first: int, after: str | None
) -> PostConnection:
    """``User.posts``: keyset pages of the author's live posts, newest first."""
    ctx = info.context
    check_first(first, ctx.limits.max_page_size)
    before = decode_entry_cursor(after) if after else None
    position = (time_of(before.score), before.post_id) if before else None
    async with ctx.engine.connect() as conn:
        records, has_next = await posts_of_author(conn, author_id, first=first, after=position)
    for r in records:
        ctx.loaders.post_by_id.prime(r.id, r)
    ok, counts = await asyncio.gather(
        visibility.visible_posts(ctx, records), ctx.loaders.counts_by_user_id.load(author_id)
    )
    edges = _edges([r for r, keep in zip(records, ok, strict=True) if keep])
    return PostConnection(
        edges=edges,
        page_info=page_info([e.cursor for e in edges], has_next, after),
        total_count=counts.posts,
    )


async def home_feed_connection(info: Info, first: int, after: str | None) -> FeedConnection:
    """``viewer.feed``: the hybrid home feed (see domain.feed.read_feed)."""
    ctx = info.context
    viewer = ctx.require_viewer()
    check_first(first, ctx.limits.max_page_size)
    before = decode_entry_cursor(after) if after else None

    async def visible(entries: Sequence[Entry]) -> list[bool]:
        records = await ctx.loaders.post_by_id.load_many([e.post_id for e in entries])
        return await visibility.visible_posts(ctx, records, home_feed=True)

    page = await read_home_feed(
        ctx.engine,
        ctx.feed_stores(),
        ctx.feed_config,
        viewer,
        first=first,
        before=before,
        visible=visible,
    )
    records = await ctx.loaders.post_by_id.load_many([e.post_id for e in page.entries])
    edges = _edges(records)
    return FeedConnection(
        edges=edges, page_info=page_info([e.cursor for e in edges], page.has_next, after)
    )


async def page_of_posts(
    info: Info, post_ids: Sequence[uuid.UUID], has_next: bool, after: str | None
) -> tuple[list[PostEdge], relay.PageInfo]:
    """Edges and page info for a page of post ids, keeping only posts the viewer may see
    (batched through the dataloaders)."""
    records = await visibility.posts(info.context, list(post_ids))
    edges = _edges(records)
    return edges, page_info([e.cursor for e in edges], has_next, after)


def _edges(records: Sequence[PostRecord | None]) -> list[PostEdge]:
    return [
        PostEdge(cursor=encode_entry_cursor(Entry.of(r.created_at, r.id)), node=Post.from_record(r))
        for r in records
        if r is not None
    ]


@strawberry.input(description="A media file to attach: an absolute http(s) URL and its kind.")
class MediaInput:
    url: str
    kind: MediaKind


@strawberry.input
class CreatePostInput:
    caption: str = strawberry.field(default="", description="Up to 2,200 characters.")
    media: list[MediaInput] = strawberry.field(default_factory=list, description="At most 10.")


@strawberry.input
class DeletePostInput:
    post_id: strawberry.ID = strawberry.field(description="A Post global id.")


@strawberry.type(description="The post is published; followers' feeds receive it shortly.")
class CreatePostSuccess:
    post: Post


@strawberry.type(description="The post is deleted (also when it already was).")
class DeletePostSuccess:
    deleted_post_id: strawberry.ID


CreatePostResult = Annotated[
    CreatePostSuccess | ValidationError, strawberry.union("CreatePostResult")
]
DeletePostResult = Annotated[
    DeletePostSuccess | ValidationError | NotFoundError | NotPostAuthorError,
    strawberry.union("DeletePostResult"),
]
