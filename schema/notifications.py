"""The ``Notification`` node, the viewer's notification connection and the
markNotificationsRead mutation's input, payload and result union."""

from __future__ import annotations

import datetime as dt
import uuid
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Self

import strawberry
from strawberry import relay

from domain.notifications.queries import (
    NotificationRecord,
    notifications_by_ids,
    notifications_page,
    unread_notification_count,
)
from schema import visibility
from schema.context import Context
from schema.errors import ValidationError
from schema.ids import parse_node_ids
from schema.pagination import check_first, decode_cursor, encode_cursor, page_info

if TYPE_CHECKING:
    from schema.engagement import Comment
    from schema.posts import Post
    from schema.users import User

Info = strawberry.Info[Context, None]


@strawberry.enum(description="What a notification is about.")
class NotificationKind(Enum):
    FOLLOW = "follow"
    FOLLOW_DIGEST = "follow_digest"
    FOLLOW_REQUEST = "follow_request"
    LIKE = "like"
    COMMENT = "comment"
    REPLY = "reply"
    MENTION = "mention"


@strawberry.type(
    description="Something that happened to you: a follow (FOLLOW_DIGEST: the day's "
    "followers past the daily cap, `count` of them), a follow request, likes of your post "
    "(coalesced over 10 minutes: `actor` is the latest liker, `count` the distinct people "
    "who like it), a comment on your post, a reply to your comment, or a mention."
)
class Notification(relay.Node):
    pk: relay.NodeID[str]
    kind: NotificationKind
    count: int = strawberry.field(
        description="People behind it: the distinct people who like the post (LIKE; a repeat "
        "like adds nobody, an unlike takes its liker out), followers (FOLLOW_DIGEST); "
        "otherwise 1."
    )
    created_at: dt.datetime
    read: bool
    actor_id: strawberry.Private[uuid.UUID | None]
    post_id: strawberry.Private[uuid.UUID | None]
    comment_id: strawberry.Private[uuid.UUID | None]

    @classmethod
    def from_record(cls, rec: NotificationRecord) -> Self:
        """Build the GraphQL object from a domain record."""
        return cls(
            pk=str(rec.id),
            kind=NotificationKind(rec.kind),
            count=rec.count,
            created_at=rec.created_at,
            read=rec.read_at is not None,
            actor_id=rec.actor_id,
            post_id=rec.post_id,
            comment_id=rec.comment_id,
        )

    @strawberry.field(
        description="Who did it (the latest of them for LIKE); null for FOLLOW_DIGEST and "
        "for an account that is gone."
    )
    async def actor(self, info: Info) -> Annotated[User, strawberry.lazy("schema.users")] | None:
        from schema.users import User as UserType

        if self.actor_id is None:
            return None
        (rec,) = await visibility.accounts(info.context, [self.actor_id], listed=True)
        return UserType.from_record(rec) if rec else None

    @strawberry.field(description="The post it is about; null if none or no longer visible.")
    async def post(self, info: Info) -> Annotated[Post, strawberry.lazy("schema.posts")] | None:
        from schema.posts import Post as PostType

        if self.post_id is None:
            return None
        (rec,) = await visibility.posts(info.context, [self.post_id])
        return PostType.from_record(rec) if rec else None

    @strawberry.field(
        description="The comment (COMMENT, REPLY, a mention in a comment); null if none or no "
        "longer visible (deleted, or on a post you cannot see)."
    )
    async def comment(
        self, info: Info
    ) -> Annotated[Comment, strawberry.lazy("schema.engagement")] | None:
        from schema.engagement import Comment as CommentType

        if self.comment_id is None:
            return None
        (rec,) = await visibility.comments(info.context, [self.comment_id])
        return CommentType.from_record(rec) if rec else None

    @classmethod
    async def resolve_nodes(  # type: ignore[override]
        cls, *, info: Info, node_ids: list[str], required: bool = False
    ) -> list[Self | None]:
        """Resolve ``node``/``nodes``: the viewer's own notifications that show, else null."""
        ids = parse_node_ids(node_ids)
        if info.context.viewer_id is None:
            return [None] * len(ids)
        async with info.context.engine.connect() as conn:
            found = await notifications_by_ids(conn, [i for i in ids if i])
        records = [found.get(i) if i else None for i in ids]
        ok = await visibility.visible_notifications(info.context, records)
        return [
            cls.from_record(r) if r and keep else None for r, keep in zip(records, ok, strict=True)
        ]


@strawberry.type(description="A notification in the list; the cursor is its position.")
class NotificationEdge:
    cursor: str
    node: Notification


@strawberry.type(description="Your notifications, newest first (Relay connection).")
class NotificationConnection:
    edges: list[NotificationEdge]
    page_info: relay.PageInfo


async def notifications_connection(
    info: Info, recipient_id: uuid.UUID, first: int, after: str | None
) -> NotificationConnection:
    """``viewer.notifications``: keyset pages on (created_at, id), newest first; actors,
    posts and comments resolve through the request's dataloaders (constant queries)."""
    ctx = info.context
    check_first(first, ctx.limits.max_page_size)
    position = decode_cursor(after) if after else None
    async with ctx.engine.connect() as conn:
        records, has_next = await notifications_page(
            conn, recipient_id, first=first, after=position
        )
    ok = await visibility.visible_notifications(ctx, records)
    edges = [
        NotificationEdge(cursor=encode_cursor(r.position), node=Notification.from_record(r))
        for r, keep in zip(records, ok, strict=True)
        if keep
    ]
    return NotificationConnection(
        edges=edges,
        page_info=page_info([e.cursor for e in edges], has_next, after),
    )


async def unread_count(info: Info, recipient_id: uuid.UUID) -> int:
    """``viewer.unreadNotificationCount``: exact, a sum of at most K counter rows."""
    async with info.context.engine.connect() as conn:
        return await unread_notification_count(conn, recipient_id)


@strawberry.input
class MarkNotificationsReadInput:
    ids: list[strawberry.ID] | None = strawberry.field(
        default=None,
        description="Notification ids to mark read; omitted or empty: all of yours. Ids "
        "that are not your notifications are ignored.",
    )


@strawberry.type(description="The notifications are read; your unread count now.")
class MarkNotificationsReadSuccess:
    unread_notification_count: int


MarkNotificationsReadResult = Annotated[
    MarkNotificationsReadSuccess | ValidationError,
    strawberry.union("MarkNotificationsReadResult"),
]
