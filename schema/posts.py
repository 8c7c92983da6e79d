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
from strawberry.types.nodes import SelectedField

from domain.feed.hydration import HydratedPost, Wanted
from domain.feed.read_feed import read_home_feed
from domain.feed.timelines import Entry, time_of
from domain.identity.queries import UserRecord
from domain.posts.queries import PostRecord, posts_of_author
from schema import visibility
from schema.context import Context
from schema.errors import NotFoundError, NotPostAuthorError, ValidationError
from schema.ids import parse_node_ids
from schema.loaders import PostCounts, UserCounts
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
    # What a hydrated page already read (schema.visibility.home_feed_posts): the
    # fields below answer from these at once; None: through the dataloaders.
    author_record: strawberry.Private[UserRecord | None] = None
    author_counts: strawberry.Private[UserCounts | None] = None
    counts: strawberry.Private[PostCounts | None] = None
    liked: strawberry.Private[bool | None] = None

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

    @classmethod
    def from_hydrated(cls, h: HydratedPost) -> Self:
        """Build the GraphQL object from a hydrated post (its author, counts and the
        viewer's like come with it)."""
        post = cls.from_record(h.post)
        post.author_record = h.author
        if h.author_counts is not None:
            post.author_counts = UserCounts(*h.author_counts)
        if h.post_counts is not None:
            post.counts = PostCounts(*h.post_counts)
        post.liked = h.liked
        return post

    # The resolvers below are plain functions: they return the value when the post was
    # hydrated, else an awaitable of it (graphql-core awaits what a resolver returns).

    @strawberry.field(description="Who wrote the post.")
    def author(self, info: Info) -> Annotated[User, strawberry.lazy("schema.users")]:
        from schema.users import User as UserType

        if self.author_record is not None:
            return UserType.from_record(self.author_record, counts=self.author_counts)
        return self._load_author(info)  # type: ignore[return-value]

    async def _load_author(self, info: Info):
        from schema.users import User as UserType

        return UserType.from_record(await info.context.loaders.user_by_id.load(self.author_id))

    @strawberry.field(
        description="Likes, exact, O(1) to read: as many as `likes` lists for you (no "
        "banned or deleted account, nobody on the other side of a block)."
    )
    def like_count(self, info: Info) -> int:
        if self.counts is not None:
            return self.counts.likes
        return self._load_counts(info, "likes")  # type: ignore[return-value]

    @strawberry.field(
        description="Live comments and replies, exact, O(1) to read: as many as `comments` "
        "and their `replies` list for you."
    )
    def comment_count(self, info: Info) -> int:
        if self.counts is not None:
            return self.counts.comments
        return self._load_counts(info, "comments")  # type: ignore[return-value]

    async def _load_counts(self, info: Info, kind: str) -> int:
        return getattr(await info.context.loaders.counts_by_post_id.load(self.post_id), kind)

    @strawberry.field(description="Whether the viewer likes this post (false when anonymous).")
    def viewer_has_liked(self, info: Info) -> bool:
        if self.liked is not None:
            return self.liked
        return self._load_liked(info)  # type: ignore[return-value]

    async def _load_liked(self, info: Info) -> bool:
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


#: The fields of a feed edge's node whose facts a hydration can load up front.
_AUTHOR_COUNTS = frozenset({"followerCount", "followingCount", "postCount"})
_POST_COUNTS = frozenset({"likeCount", "commentCount"})


def _wanted(info: Info) -> Wanted:
    """What the selection under ``edges { node { … } }`` asks beyond posts and authors
    (fragments included), so one statement loads it with the page."""
    node: set[str] = set()
    author: set[str] = set()

    def walk(selections, path: tuple[str, ...]) -> None:
        for sel in selections:
            if not isinstance(sel, SelectedField):  # a fragment, spread or inline
                walk(sel.selections, path)
                continue
            name = sel.name
            if path == ("edges", "node"):
                node.add(name)
            elif path == ("edges", "node", "author"):
                author.add(name)
            if len(path) < 3:
                walk(sel.selections, (*path, name))

    for field in info.selected_fields:
        walk(field.selections, ())
    return Wanted(
        user_counts=bool(author & _AUTHOR_COUNTS),
        post_counts=bool(node & _POST_COUNTS),
        viewer_liked="viewerHasLiked" in node,
    )


async def home_feed_connection(info: Info, first: int, after: str | None) -> FeedConnection:
    """``viewer.feed``: the hybrid home feed (see domain.feed.read_feed), each round of
    candidates hydrated in one statement (schema.visibility.home_feed_posts)."""
    ctx = info.context
    viewer = ctx.require_viewer()
    check_first(first, ctx.limits.max_page_size)
    before = decode_entry_cursor(after) if after else None
    wanted = _wanted(info)
    kept: dict[uuid.UUID, HydratedPost] = {}

    async def visible(entries: Sequence[Entry]) -> list[bool]:
        found = await visibility.home_feed_posts(ctx, [e.post_id for e in entries], wanted)
        kept.update(found)
        return [e.post_id in found for e in entries]

    page = await read_home_feed(
        ctx.engine,
        ctx.feed_stores(),
        ctx.feed_config,
        viewer,
        first=first,
        before=before,
        visible=visible,
    )
    edges = [_edge(kept[e.post_id]) for e in page.entries]
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


def _edge(h: HydratedPost) -> PostEdge:
    cursor = encode_entry_cursor(Entry.of(h.post.created_at, h.post.id))
    return PostEdge(cursor=cursor, node=Post.from_hydrated(h))


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
