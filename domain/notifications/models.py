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

#: What a consumer did with one (event, recipient, kind): created a notification,
#: coalesced it into one (likes), counted it for the daily digest (follows past the cap),
#: or dropped it as a repeat (the same follower again on the same day).
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
    # People behind it: the likers of a like notification (its notification_actors not
    # withdrawn; 0 when all withdrew: then nobody sees it), the followers of a digest.
    Column("count", Integer, nullable=False, server_default=text("1")),
    # The outbox event that created it (a derived UUID for digests): the idempotency key.
    Column("source_event_id", Uuid, nullable=False),
    # The time of that event (of the first like of a coalesced group), not of the job.
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("read_at", DateTime(timezone=True), nullable=True),
    CheckConstraint(f"kind IN ({_KINDS_SQL})", name="kind_known"),
    CheckConstraint("count >= 0", name="count_not_negative"),
    # A job that runs twice creates nothing twice.
    Index("notifications_source_key", "source_event_id", "recipient_id", "kind", unique=True),
    # viewer.notifications: newest first, keyset on (created_at, id).
    Index(
        "notifications_recipient_recent_idx",
        "recipient_id",
        text("created_at DESC"),
        text("id DESC"),
    ),
    # markNotificationsRead (all) and the unread-counter check touch unread rows only.
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
    # What points at a post or a comment: removed with them when an account is purged
    # (and the foreign-key checks of those deletes read these).
    Index("notifications_post_id_idx", "post_id", postgresql_where=text("post_id IS NOT NULL")),
    Index(
        "notifications_comment_id_idx",
        "comment_id",
        postgresql_where=text("comment_id IS NOT NULL"),
    ),
)

#: The people behind a like notification, one row each (docs/api/notifications.md
#: "Notifications"): its ``count`` is the number of rows not withdrawn, so a repeat like
#: adds nobody and an unlike takes its liker out again. A block or a ban deletes the
#: account's rows.
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
    # The time of the like that brought them in (the event's, not the job's).
    Column("created_at", DateTime(timezone=True), nullable=False),
    # Set when the like is withdrawn (unlike); cleared if the same person likes again.
    Column("withdrawn_at", DateTime(timezone=True), nullable=True),
    PrimaryKeyConstraint("notification_id", "actor_id"),
    Index("notification_actors_actor_id_idx", "actor_id"),
)

#: One row per (event, recipient, kind) of the kinds that aggregate (follows, likes): the
#: idempotency record of a coalesced like or a follow past the daily cap, which create
#: no row of their own, and what the follow cap and the daily digest count.
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
    # The follow cap: who was notified of a follow on that day (at most the cap + a few).
    Index(
        "notification_sources_follows_notified_idx",
        "recipient_id",
        "day",
        postgresql_where=text("kind = 'follow' AND outcome = 'notified'"),
    ),
    # The daily digest: follows past the cap, by day.
    Index(
        "notification_sources_overflow_idx",
        "day",
        "recipient_id",
        postgresql_where=text("outcome = 'overflow'"),
    ),
    # Pruning past the retention window.
    Index("notification_sources_day_idx", "day"),
)
