"""The ``Post`` node and the post connection types."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from typing import Annotated, Any, Self

import strawberry
from strawberry import relay

from domain.feed.hydration import HydratedPost
from domain.identity.queries import UserRecord
from domain.posts.queries import PostRecord, PostRevision, revisions_page
from schema import visibility
from schema.context import Info
from schema.engagement.connections import comments_connection, likes_connection
from schema.engagement.types import CommentConnection, LikeConnection
from schema.ids import parse_node_ids
from schema.loaders import PostCounts, UserCounts
from schema.media.types import Media, PostState
from schema.pagination import (
    BEFORE,
    DEFAULT_PAGE_SIZE,
    LAST,
    RESTRICTED,
    ListOf,
    ListRestriction,
    check_window,
    cursor_encoder,
    window_info,
)
from schema.refs import UserRef, user_node

_STATES = {s.value for s in PostState}


@strawberry.type(description="A post: a caption and up to 10 media files.")
class Post(relay.Node):
    pk: relay.NodeID[str]
    caption: str
    created_at: dt.datetime
    state: PostState = strawberry.field(
        description="PUBLISHED for everyone but its author, who also sees it PROCESSING and FAILED."
    )
    failure_reason: str | None = strawberry.field(
        description="Why the post could not be published (FAILED only), for its author."
    )
    edited_at: dt.datetime | None = strawberry.field(
        description="When its author last edited the caption (null: never). Editing "
        "moves the post nowhere: feeds and lists order by `createdAt`."
    )
    post_id: strawberry.Private[uuid.UUID]
    author_id: strawberry.Private[uuid.UUID]
    media_items: strawberry.Private[list[dict[str, Any]]]
    # What a hydrated page already read (domain.feed.post_filter): the
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
            created_at=rec.created_at,
            state=PostState(rec.state) if rec.state in _STATES else PostState.FAILED,
            failure_reason=rec.failure_reason if rec.state == "failed" else None,
            edited_at=rec.edited_at,
            post_id=rec.id,
            author_id=rec.author_id,
            media_items=rec.media,
        )

    @strawberry.field(
        description="Its media files, in order (none while PROCESSING), URLs under "
        "MEDIA_PUBLIC_BASE_URL."
    )
    def media(self, info: Info) -> list[Media]:
        media = info.context.media
        public_url = media.store.public_url if media is not None else None
        return [Media.of(m, public_url) for m in self.media_items]

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
    def author(self, info: Info) -> UserRef:
        if self.author_record is not None:
            return user_node(self.author_record, self.author_counts)
        return self._load_author(info)

    async def _load_author(self, info: Info) -> UserRef:
        return user_node(await info.context.loaders.user_by_id.load(self.author_id))

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
        self,
        info: Info,
        first: int | None = DEFAULT_PAGE_SIZE,
        after: str | None = None,
        last: Annotated[int | None, strawberry.argument(description=LAST)] = None,
        before: Annotated[str | None, strawberry.argument(description=BEFORE)] = None,
    ) -> LikeConnection:
        window = check_window(
            first, after, last, before, info.context.limits.max_page_size, ("likes", self.post_id)
        )
        return await likes_connection(info, self.post_id, window)

    @strawberry.field(description="Top-level comments, oldest first, each with its replies.")
    async def comments(
        self,
        info: Info,
        first: int | None = DEFAULT_PAGE_SIZE,
        after: str | None = None,
        last: Annotated[int | None, strawberry.argument(description=LAST)] = None,
        before: Annotated[str | None, strawberry.argument(description=BEFORE)] = None,
    ) -> CommentConnection:
        window = check_window(
            first,
            after,
            last,
            before,
            info.context.limits.max_page_size,
            ("comments", self.post_id),
        )
        return await comments_connection(info, self.post_id, window)

    @strawberry.field(
        description="The captions this post had before its current one, newest first "
        "(empty if never edited): whoever sees the post sees its history."
    )
    async def edit_history(
        self,
        info: Info,
        first: int | None = DEFAULT_PAGE_SIZE,
        after: str | None = None,
        last: Annotated[int | None, strawberry.argument(description=LAST)] = None,
        before: Annotated[str | None, strawberry.argument(description=BEFORE)] = None,
    ) -> PostRevisionConnection:
        ctx = info.context
        of = ("edits", self.post_id)
        window = check_window(first, after, last, before, ctx.limits.max_page_size, of)
        if self.edited_at is None:
            return PostRevisionConnection(edges=[], page_info=window_info([], False, window))
        if window.position is None:  # the usual case, batched over every post of the page
            records, more = await ctx.loaders.first_revisions_by_post_id.load(
                (self.post_id, window.size, window.backward)
            )
        else:
            async with ctx.engine.connect() as conn:
                records, more = await revisions_page(
                    conn,
                    self.post_id,
                    first=window.size,
                    after=window.position,
                    backward=window.backward,
                )
        encode = cursor_encoder(of)
        edges = [
            PostRevisionEdge(cursor=encode(r.position), node=PostRevisionNode.of(r))
            for r in records
        ]
        return PostRevisionConnection(
            edges=edges, page_info=window_info([e.cursor for e in edges], more, window)
        )

    @classmethod
    async def resolve_nodes(  # type: ignore[override]
        cls, *, info: Info, node_ids: list[str], required: bool = False
    ) -> list[Self | None]:
        """Resolve ``node``/``nodes``: posts the viewer may see, else null."""
        records = await visibility.posts(info.context, parse_node_ids(node_ids))
        return [cls.from_record(r) if r else None for r in records]


@strawberry.type(
    name="PostRevision",
    description="A caption a post had before an edit: written at `writtenAt` (the "
    "post's creation, or the edit before), replaced at `replacedAt`.",
)
class PostRevisionNode:
    caption: str
    written_at: dt.datetime
    replaced_at: dt.datetime

    @classmethod
    def of(cls, rec: PostRevision) -> Self:
        """Build the GraphQL object from a domain record."""
        return cls(caption=rec.caption, written_at=rec.written_at, replaced_at=rec.replaced_at)


@strawberry.type(description="An earlier caption; the cursor is its place in the history.")
class PostRevisionEdge:
    cursor: str
    node: PostRevisionNode


@strawberry.type(description="A post's earlier captions, newest first (Relay connection).")
class PostRevisionConnection:
    edges: list[PostRevisionEdge]
    page_info: relay.PageInfo


@strawberry.type(description="A post in a list; the cursor is its (time, id) position.")
class PostEdge:
    cursor: str
    node: Post

    @classmethod
    def of(cls, rec: PostRecord, cursor: str) -> Self:
        """The edge of a post record: its node and ``cursor``."""
        return cls(cursor=cursor, node=Post.from_record(rec))

    @classmethod
    def of_hydrated(cls, h: HydratedPost, cursor: str) -> Self:
        """The edge of a hydrated post: its node and ``cursor``."""
        return cls(cursor=cursor, node=Post.from_hydrated(h))


@strawberry.type(description="A page of posts, newest first (Relay connection).")
class PostConnection:
    edges: list[PostEdge]
    page_info: relay.PageInfo
    total_count: int | None = strawberry.field(
        description="All posts of the list, exact, where that is O(1) (a user's posts)."
    )
    restricted: ListRestriction | None = strawberry.field(default=None, description=RESTRICTED)


def post_edges(records: Sequence[PostRecord | None], of: ListOf) -> list[PostEdge]:
    """The edges of the posts of a page of the list ``of`` that remain (None: dropped by
    visibility)."""
    encode = cursor_encoder(of)
    return [PostEdge.of(r, encode((r.created_at, r.id))) for r in records if r is not None]
