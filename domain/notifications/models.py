"""Tables of notifications: what a user sees, and which events produced them."""

from __future__ import annotations

from sqlalchemy import (
    CheckConstraint,
    Column,
    Date,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    PrimaryKeyConstraint,
    Table,
    Text,
    Uuid,
    func,
    text,
)

from domain.db import metadata

#: Notification kinds (the GraphQL enum NotificationKind, upper-cased).
KINDS = (
    "follow",
    "follow_digest",
    "follow_request",
    "follow_request_approved",  # to the requester: the private account approved them
    "like",
    "comment",
    "reply",
    "mention",
    "post_published",  # to the author: the media worker published the post
    "post_failed",  # to the author: the post could not be published
)

#: What a consumer did with an (event, recipient, kind).
OUTCOMES = ("notified", "merged", "overflow", "repeat")

_KINDS_SQL = ", ".join(f"'{k}'" for k in KINDS)
_OUTCOMES_SQL = ", ".join(f"'{o}'" for o in OUTCOMES)

notifications = Table(
    "notifications",
    metadata,
    Column("id", Uuid, primary_key=True),  # UUIDv7
    Column("recipient_id", Uuid, ForeignKey("users.id"), nullable=False),
    Column("kind", Text, nullable=False),
    Column("actor_id", Uuid, ForeignKey("users.id"), nullable=True),  # null for digests
    Column("post_id", Uuid, ForeignKey("posts.id"), nullable=True),
    Column("comment_id", Uuid, ForeignKey("comments.id"), nullable=True),
    # People behind it (likers not withdrawn; 0: nobody sees it), or a digest's followers.
    Column("count", Integer, nullable=False, server_default=text("1")),
    # The creating outbox event (derived for digests): the idempotency key, and its time.
    Column("source_event_id", Uuid, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("read_at", DateTime(timezone=True), nullable=True),
    CheckConstraint(f"kind IN ({_KINDS_SQL})", name="kind_known"),
    CheckConstraint("count >= 0", name="count_not_negative"),
    Index("notifications_source_key", "source_event_id", "recipient_id", "kind", unique=True),
    Index(
        "notifications_recipient_recent_idx",
        "recipient_id",
        text("created_at DESC"),
        text("id DESC"),
    ),
    Index(
        "notifications_unread_idx",
        "recipient_id",
        postgresql_where=text("read_at IS NULL"),
    ),
    # The open like notification of a post (10-minute coalescing window).
    Index(
        "notifications_like_groups_idx",
        "post_id",
        text("created_at DESC"),
        postgresql_where=text("kind = 'like'"),
    ),
    # What an account notified others of: removed when it is blocked, banned or deleted.
    Index("notifications_actor_id_idx", "actor_id", postgresql_where=text("actor_id IS NOT NULL")),
    # What points at a post or comment: removed with them on a purge.
    Index("notifications_post_id_idx", "post_id", postgresql_where=text("post_id IS NOT NULL")),
    Index(
        "notifications_comment_id_idx",
        "comment_id",
        postgresql_where=text("comment_id IS NOT NULL"),
    ),
)

#: The people behind a like notification; ``count`` is the rows not withdrawn.
notification_actors = Table(
    "notification_actors",
    metadata,
    Column(
        "notification_id",
        Uuid,
        ForeignKey("notifications.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("actor_id", Uuid, ForeignKey("users.id"), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    # Set when the like is withdrawn (unlike); cleared if the same person likes again.
    Column("withdrawn_at", DateTime(timezone=True), nullable=True),
    PrimaryKeyConstraint("notification_id", "actor_id"),
    Index("notification_actors_actor_id_idx", "actor_id"),
)

#: One row per aggregated (event, recipient, kind): idempotency, follow cap and digest.
notification_sources = Table(
    "notification_sources",
    metadata,
    Column("source_event_id", Uuid, nullable=False),
    Column("recipient_id", Uuid, nullable=False),
    Column("kind", Text, nullable=False),
    Column("actor_id", Uuid, nullable=True),
    Column("day", Date, nullable=False),  # the event's UTC day
    Column("outcome", Text, nullable=False),
    Column("notification_id", Uuid, nullable=True),  # the one created or merged into
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("source_event_id", "recipient_id", "kind"),
    CheckConstraint(f"outcome IN ({_OUTCOMES_SQL})", name="outcome_known"),
    Index(
        "notification_sources_follows_notified_idx",
        "recipient_id",
        "day",
        postgresql_where=text("kind = 'follow' AND outcome = 'notified'"),
    ),
    Index(
        "notification_sources_overflow_idx",
        "day",
        "recipient_id",
        postgresql_where=text("outcome = 'overflow'"),
    ),
    Index("notification_sources_day_idx", "day"),
)
