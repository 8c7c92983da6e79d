"""The ``Notification`` node and the notification connection types."""

from __future__ import annotations

import datetime as dt
import uuid
from enum import Enum
from typing import Self

import strawberry
from strawberry import relay

from domain.notifications.queries import NotificationRecord, notifications_by_ids
from schema import visibility
from schema.context import Info
from schema.engagement.types import Comment
from schema.ids import parse_node_ids
from schema.posts.types import Post
from schema.refs import UserRef, user_node


@strawberry.enum(description="What a notification is about.")
class NotificationKind(Enum):
    FOLLOW = "follow"
    FOLLOW_DIGEST = "follow_digest"
    FOLLOW_REQUEST = "follow_request"
    FOLLOW_REQUEST_APPROVED = strawberry.enum_value(
        "follow_request_approved",
        description="The private account `actor` approved your follow request.",
    )
    LIKE = "like"
    COMMENT = "comment"
    REPLY = "reply"
    MENTION = "mention"
    POST_PUBLISHED = strawberry.enum_value(
        "post_published", description="Your post's media were processed: it is published."
    )
    POST_FAILED = strawberry.enum_value(
        "post_failed",
        description="Your post could not be published: its `failureReason` says why.",
    )


@strawberry.type(
    description="Something that happened to you: a follow (FOLLOW_DIGEST: the day's "
    "followers past the daily cap, `count` of them), a follow request (or the approval of "
    "yours), likes of your post "
    "(coalesced over 10 minutes: `actor` is the latest liker, `count` the distinct people "
    "who like it), a comment on your post, a reply to your comment, a mention, or your "
    "post published (or failed) after its media were processed."
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
    async def actor(self, info: Info) -> UserRef | None:
        if self.actor_id is None:
            return None
        (rec,) = await visibility.accounts(info.context, [self.actor_id], listed=True)
        return user_node(rec) if rec else None

    @strawberry.field(description="The post it is about; null if none or no longer visible.")
    async def post(self, info: Info) -> Post | None:
        if self.post_id is None:
            return None
        (rec,) = await visibility.posts(info.context, [self.post_id])
        return Post.from_record(rec) if rec else None

    @strawberry.field(
        description="The comment (COMMENT, REPLY, a mention in a comment); null if none or no "
        "longer visible (deleted, or on a post you cannot see)."
    )
    async def comment(self, info: Info) -> Comment | None:
        if self.comment_id is None:
            return None
        (rec,) = await visibility.comments(info.context, [self.comment_id])
        return Comment.from_record(rec) if rec else None

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
