"""Tables of the follow graph (docs/seeds/followers-following.md "Table")."""

from __future__ import annotations

from sqlalchemy import (
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Index,
    PrimaryKeyConstraint,
    Table,
    Text,
    Uuid,
    func,
    text,
)

from domain.db import metadata
from domain.visibility.predicates import is_live

#: Where a follow came from (``import``: bulk-loaded by ``roost load-graph``).
FOLLOW_SOURCES = ("profile", "phone", "x", "feed", "suggested", "referral", "import")

follows = Table(
    "follows",
    metadata,
    Column("id", Uuid, primary_key=True),  # UUIDv7
    Column("follower_id", Uuid, ForeignKey("users.id"), nullable=False),
    Column("followee_id", Uuid, ForeignKey("users.id"), nullable=False),
    Column("source", Text, nullable=False, server_default="profile"),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("deleted_at", DateTime(timezone=True), nullable=True),  # null = live follow
    CheckConstraint("follower_id <> followee_id", name="no_self_follow"),
    # One live follow per pair; a re-follow after an unfollow inserts a new row.
    Index(
        "follows_pair_live_idx",
        "follower_id",
        "followee_id",
        unique=True,
        postgresql_where=text(f"{is_live()}"),
    ),
    Index(
        "follows_followee_live_idx",
        "followee_id",
        text("created_at DESC"),
        text("id DESC"),
        postgresql_where=text(f"{is_live()}"),
    ),
    Index(
        "follows_follower_live_idx",
        "follower_id",
        text("created_at DESC"),
        text("id DESC"),
        postgresql_where=text(f"{is_live()}"),
    ),
    # Ended follows of an account, either side: its purge deletes them too.
    Index(
        "follows_follower_gone_idx", "follower_id", postgresql_where=text("deleted_at IS NOT NULL")
    ),
    Index(
        "follows_followee_gone_idx", "followee_id", postgresql_where=text("deleted_at IS NOT NULL")
    ),
)

blocks = Table(
    "blocks",
    metadata,
    Column("blocker_id", Uuid, ForeignKey("users.id"), nullable=False),
    Column("blocked_id", Uuid, ForeignKey("users.id"), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("blocker_id", "blocked_id"),
    CheckConstraint("blocker_id <> blocked_id", name="no_self_block"),
    Index("blocks_blocked_id_idx", "blocked_id"),
    # viewer.blockedUsers: whom X blocked, newest first (keyset on created_at, blocked_id).
    Index(
        "blocks_blocker_recent_idx", "blocker_id", text("created_at DESC"), text("blocked_id DESC")
    ),
)

#: Mutes (docs/api/mute-and-block.md "Mute and blocked list"): only the muter's side changes.
mutes = Table(
    "mutes",
    metadata,
    Column("muter_id", Uuid, ForeignKey("users.id"), nullable=False),
    Column("muted_id", Uuid, ForeignKey("users.id"), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("muter_id", "muted_id"),
    CheckConstraint("muter_id <> muted_id", name="no_self_mute"),
    Index("mutes_muter_recent_idx", "muter_id", text("created_at DESC"), text("muted_id DESC")),
    # Who muted X: an account's purge deletes these too.
    Index("mutes_muted_id_idx", "muted_id"),
)

#: Pending follow requests (docs/design.md "Data"), deleted when answered or cancelled.
follow_requests = Table(
    "follow_requests",
    metadata,
    Column("id", Uuid, primary_key=True),  # UUIDv7
    Column("requester_id", Uuid, ForeignKey("users.id"), nullable=False),
    Column("target_id", Uuid, ForeignKey("users.id"), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    CheckConstraint("requester_id <> target_id", name="no_self_request"),
    # One pending request per pair; also serves "has the viewer requested these users".
    Index("follow_requests_pair_key", "requester_id", "target_id", unique=True),
    Index(
        "follow_requests_target_recent_idx",
        "target_id",
        text("created_at DESC"),
        text("id DESC"),
    ),
)
