"""Comments, likes and hashtags: types, connections, inputs and result unions."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Self

import strawberry
from graphql import GraphQLError
from strawberry import relay

from domain.engagement.add_comment import CommentRecord
from domain.engagement.queries import (
    hashtag_posts_page,
    likers_page,
    replies_page,
    top_comments_page,
)
from domain.feed.timelines import time_of
from schema import visibility
from schema.context import Context
from schema.errors import NotCommentModeratorError, NotFoundError, ValidationError
from schema.ids import parse_node_ids
from schema.pagination import (
    DEFAULT_PAGE_SIZE,
    check_first,
    decode_cursor,
    decode_entry_cursor,
    encode_cursor,
    page_info,
)

if TYPE_CHECKING:
    from schema.posts import Post, PostConnection
    from schema.users import User

Info = strawberry.Info[Context, None]
REPLIES_PREVIEW = 3


@strawberry.type(description="A comment on a post; replies answer a top-level comment.")
class Comment(relay.Node):
    pk: relay.NodeID[str]
    body: str
    created_at: dt.datetime
    comment_id: strawberry.Private[uuid.UUID]
    post_id: strawberry.Private[uuid.UUID]
    author_id: strawberry.Private[uuid.UUID]
    parent_id: strawberry.Private[uuid.UUID | None]

    @classmethod
    def from_record(cls, rec: CommentRecord) -> Self:
        """Build the GraphQL object from a domain record."""
        return cls(
            pk=str(rec.id),
            body=rec.body,
            created_at=rec.created_at,
            comment_id=rec.id,
            post_id=rec.post_id,
            author_id=rec.author_id,
            parent_id=rec.parent_id,
        )

    @strawberry.field(description="Who wrote the comment.")
    async def author(self, info: Info) -> Annotated[User, strawberry.lazy("schema.users")]:
        from schema.users import User as UserType

        # A visible comment's author is listed for the viewer (schema.visibility).
        return UserType.from_record(await info.context.loaders.user_by_id.load(self.author_id))

    @strawberry.field(
        description="The post commented on (a comment shows only on a post that shows)."
    )
    async def post(self, info: Info) -> Annotated[Post, strawberry.lazy("schema.posts")]:
        from schema.posts import Post as PostType

        (rec,) = await visibility.posts(info.context, [self.post_id])
        if rec is None:  # deleted or hidden since the comment was read: not found
            raise GraphQLError("The post is not visible.", extensions={"code": "NOT_FOUND"})
        return PostType.from_record(rec)

    @strawberry.field(description="The comment this one replies to (null for top-level).")
    async def parent(self, info: Info) -> Comment | None:
        if self.parent_id is None:
            return None
        (rec,) = await visibility.comments(info.context, [self.parent_id])
        return Comment.from_record(rec) if rec else None

    @strawberry.field(description="Replies, oldest first (top-level comments only).")
    async def replies(
        self, info: Info, first: int = REPLIES_PREVIEW, after: str | None = None
    ) -> CommentConnection:
        ctx = info.context
        check_first(first, ctx.limits.max_page_size)
        if self.parent_id is not None:
            return await _comment_connection(info, [], False, after)
        if after is None:  # the usual case, batched over every comment of the page
            records, more = await ctx.loaders.first_replies_by_parent_id.load(
                (self.comment_id, first)
            )
        else:
            async with ctx.engine.connect() as conn:
                records, more = await replies_page(
                    conn, self.comment_id, first=first, after=decode_cursor(after)
                )
        return await _comment_connection(info, records, more, after)

    @classmethod
    async def resolve_nodes(  # type: ignore[override]
        cls, *, info: Info, node_ids: list[str], required: bool = False
    ) -> list[Self | None]:
        """Resolve ``node``/``nodes``: comments the viewer may see (schema.visibility:
        live, author listed, post visible, a reply's thread visible), else null."""
        records = await visibility.comments(info.context, parse_node_ids(node_ids))
        return [cls.from_record(r) if r else None for r in records]


@strawberry.type
class CommentEdge:
    cursor: str
    node: Comment


@strawberry.type(description="A page of comments (Relay connection).")
class CommentConnection:
    edges: list[CommentEdge]
    page_info: relay.PageInfo


@strawberry.type(description="A like: who and when; the cursor is the like's position.")
class LikeEdge:
    cursor: str
    node: Annotated[User, strawberry.lazy("schema.users")]
    liked_at: dt.datetime


@strawberry.type(description="Who liked a post, newest first (Relay connection).")
class LikeConnection:
    edges: list[LikeEdge]
    page_info: relay.PageInfo
    total_count: int = strawberry.field(
        description="The post's likes you can page through, exact (likeCount)."
    )


@strawberry.type(description="A hashtag: its folded name and its posts, newest first.")
class Hashtag:
    name: str

    @strawberry.field(description="Posts with this tag that you may see, newest first.")
    async def posts(
        self, info: Info, first: int = DEFAULT_PAGE_SIZE, after: str | None = None
    ) -> Annotated[PostConnection, strawberry.lazy("schema.posts")]:
        from schema.posts import PostConnection as Conn
        from schema.posts import page_of_posts

        ctx = info.context
        check_first(first, ctx.limits.max_page_size)
        before = decode_entry_cursor(after) if after else None
        position = (time_of(before.score), before.post_id) if before else None
        async with ctx.engine.connect() as conn:
            ids, more = await hashtag_posts_page(conn, self.name, first=first, after=position)
        edges, info_ = await page_of_posts(info, ids, more, after)
        return Conn(edges=edges, page_info=info_, total_count=None)


async def likes_connection(
    info: Info, post_id: uuid.UUID, first: int, after: str | None
) -> LikeConnection:
    """``Post.likes``: likers newest first, those listed for the viewer (no banned or
    deleted account, no block either way); ``totalCount`` is the post's likes as this
    viewer sees them, the same number."""
    from schema.users import User as UserType

    ctx = info.context
    check_first(first, ctx.limits.max_page_size)
    async with ctx.engine.connect() as conn:
        rows, more = await likers_page(
            conn,
            post_id,
            first=first,
            after=decode_cursor(after) if after else None,
            viewer_id=ctx.viewer_id,
        )
    users, counts = await asyncio.gather(
        visibility.accounts(ctx, [u for u, _ in rows], listed=True),
        ctx.loaders.counts_by_post_id.load(post_id),
    )
    edges = [
        LikeEdge(
            cursor=encode_cursor((liked_at, uid)), node=UserType.from_record(rec), liked_at=liked_at
        )
        for (uid, liked_at), rec in zip(rows, users, strict=True)
        if rec is not None
    ]
    return LikeConnection(
        edges=edges,
        page_info=page_info([e.cursor for e in edges], more, after),
        total_count=counts.likes,
    )


async def comments_connection(
    info: Info, post_id: uuid.UUID, first: int, after: str | None
) -> CommentConnection:
    """``Post.comments``: top-level comments oldest first, replies under each."""
    ctx = info.context
    check_first(first, ctx.limits.max_page_size)
    async with ctx.engine.connect() as conn:
        records, more = await top_comments_page(
            conn, post_id, first=first, after=decode_cursor(after) if after else None
        )
    return await _comment_connection(info, records, more, after)


async def _comment_connection(
    info: Info, records: Sequence[CommentRecord], more: bool, after: str | None
) -> CommentConnection:
    loader = info.context.loaders.comment_by_id
    for r in records:  # their replies' visibility reads them as parents
        loader.prime(r.id, r)
    ok = await visibility.visible_comments(info.context, records)
    edges = [
        CommentEdge(cursor=encode_cursor((r.created_at, r.id)), node=Comment.from_record(r))
        for r, keep in zip(records, ok, strict=True)
        if keep
    ]
    return CommentConnection(
        edges=edges, page_info=page_info([e.cursor for e in edges], more, after)
    )


@strawberry.input(description="The post to like or unlike.")
class PostTargetInput:
    post_id: strawberry.ID = strawberry.field(description="A Post global id.")


@strawberry.input
class AddCommentInput:
    post_id: strawberry.ID
    body: str = strawberry.field(description="1 to 2,200 characters.")
    parent_id: strawberry.ID | None = strawberry.field(
        default=None, description="A top-level Comment to reply to."
    )


@strawberry.input
class DeleteCommentInput:
    comment_id: strawberry.ID


@strawberry.type(description="The viewer likes `post` now (also when they already did).")
class LikePostSuccess:
    post: Annotated[Post, strawberry.lazy("schema.posts")]


@strawberry.type(description="The viewer does not like `post` now.")
class UnlikePostSuccess:
    post: Annotated[Post, strawberry.lazy("schema.posts")]


@strawberry.type
class AddCommentSuccess:
    comment: Comment


@strawberry.type(description="The comment (and its replies) are deleted.")
class DeleteCommentSuccess:
    deleted_comment_id: strawberry.ID
    deleted_count: int


LikePostResult = Annotated[
    LikePostSuccess | ValidationError | NotFoundError, strawberry.union("LikePostResult")
]
UnlikePostResult = Annotated[
    UnlikePostSuccess | ValidationError | NotFoundError, strawberry.union("UnlikePostResult")
]
AddCommentResult = Annotated[
    AddCommentSuccess | ValidationError | NotFoundError, strawberry.union("AddCommentResult")
]
DeleteCommentResult = Annotated[
    DeleteCommentSuccess | ValidationError | NotFoundError | NotCommentModeratorError,
    strawberry.union("DeleteCommentResult"),
]
