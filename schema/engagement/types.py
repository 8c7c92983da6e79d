"""The ``Comment`` node and the comment and like connection types."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from typing import Annotated, Self

import strawberry
from graphql import GraphQLError
from strawberry import relay

from domain.engagement.add_comment import CommentRecord
from domain.engagement.queries import replies_page
from schema import visibility
from schema.context import Info
from schema.ids import parse_node_ids
from schema.pagination import (
    BEFORE,
    LAST,
    ListOf,
    Window,
    check_window,
    cursor_encoder,
    window_info,
)
from schema.refs import PostRef, UserRef, post_node, user_node

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
    async def author(self, info: Info) -> UserRef:
        # A visible comment's author is listed for the viewer (schema.visibility).
        return user_node(await info.context.loaders.user_by_id.load(self.author_id))

    @strawberry.field(
        description="The post commented on (a comment shows only on a post that shows)."
    )
    async def post(self, info: Info) -> PostRef:
        (rec,) = await visibility.posts(info.context, [self.post_id])
        if rec is None:  # deleted or hidden since the comment was read: not found
            raise GraphQLError("The post is not visible.", extensions={"code": "NOT_FOUND"})
        return post_node(rec)

    @strawberry.field(description="The comment this one replies to (null for top-level).")
    async def parent(self, info: Info) -> Comment | None:
        if self.parent_id is None:
            return None
        (rec,) = await visibility.comments(info.context, [self.parent_id])
        return Comment.from_record(rec) if rec else None

    @strawberry.field(description="Replies, oldest first (top-level comments only).")
    async def replies(
        self,
        info: Info,
        first: int | None = REPLIES_PREVIEW,
        after: str | None = None,
        last: Annotated[int | None, strawberry.argument(description=LAST)] = None,
        before: Annotated[str | None, strawberry.argument(description=BEFORE)] = None,
    ) -> CommentConnection:
        ctx = info.context
        of = ("replies", self.comment_id)
        window = check_window(
            first, after, last, before, ctx.limits.max_page_size, of, REPLIES_PREVIEW
        )
        if self.parent_id is not None:
            return await comment_connection(info, [], False, window, of)
        if window.position is None:  # the usual case, batched over every comment of the page
            records, more = await ctx.loaders.first_replies_by_parent_id.load(
                (self.comment_id, window.size, window.backward)
            )
        else:
            async with ctx.engine.connect() as conn:
                records, more = await replies_page(
                    conn,
                    self.comment_id,
                    first=window.size,
                    after=window.position,
                    backward=window.backward,
                )
        return await comment_connection(info, records, more, window, of)

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
    counted_post: strawberry.Private[uuid.UUID | None] = None

    @strawberry.field(
        description="On a post's comments: all its comments you can see, replies "
        "included, exact (commentCount; from counters, O(1)). Null on a comment's replies."
    )
    async def total_count(self, info: Info) -> int | None:
        if self.counted_post is None:
            return None
        return (await info.context.loaders.counts_by_post_id.load(self.counted_post)).comments


@strawberry.type(description="A like: who and when; the cursor is the like's position.")
class LikeEdge:
    cursor: str
    node: UserRef
    liked_at: dt.datetime


@strawberry.type(description="Who liked a post, newest first (Relay connection).")
class LikeConnection:
    edges: list[LikeEdge]
    page_info: relay.PageInfo
    total_count: int = strawberry.field(
        description="The post's likes you can page through, exact (likeCount)."
    )


async def comment_connection(
    info: Info,
    records: Sequence[CommentRecord],
    more: bool,
    window: Window,
    of: ListOf,
    *,
    counted_post: uuid.UUID | None = None,
) -> CommentConnection:
    """The connection of a page of comments of the list ``of`` (a post's top-level
    comments or a comment's replies, oldest first; ``counted_post``: the post whose
    ``commentCount`` is its ``totalCount``):
    those the viewer may see (schema.visibility), each primed in the request's
    comment loader (their replies' visibility reads them as parents)."""
    loader = info.context.loaders.comment_by_id
    for r in records:
        loader.prime(r.id, r)
    ok = await visibility.visible_comments(info.context, records)
    encode = cursor_encoder(of)
    edges = [
        CommentEdge(cursor=encode((r.created_at, r.id)), node=Comment.from_record(r))
        for r, keep in zip(records, ok, strict=True)
        if keep
    ]
    return CommentConnection(
        edges=edges,
        page_info=window_info([e.cursor for e in edges], more, window),
        counted_post=counted_post,
    )
