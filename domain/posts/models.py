"""The ``posts`` table."""

from __future__ import annotations

from sqlalchemy import (
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Table,
    Text,
    Uuid,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from domain.db import metadata
from domain.visibility.predicates import is_live

posts = Table(
    "posts",
    metadata,
    Column("id", Uuid, primary_key=True),  # UUIDv7: time-ordered, ties broken by id
    Column("author_id", Uuid, ForeignKey("users.id"), nullable=False),
    Column("caption", Text, nullable=False, server_default=""),
    # ≤ 10 items with kind, url, variants… (domain.media.media_json); empty while processing.
    Column("media", JSONB, nullable=False, server_default=text("'[]'::jsonb")),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("deleted_at", DateTime(timezone=True), nullable=True),
    # processing (its author only sees it) -> published | failed; removed: known-bad media.
    Column("state", Text, nullable=False, server_default="published"),
    Column("failure_reason", Text, nullable=True),  # what the author reads when failed
    Column("published_at", DateTime(timezone=True), nullable=True),
    # When its caption was last edited (domain.posts.edit_post); null if never.
    Column("edited_at", DateTime(timezone=True), nullable=True),
    CheckConstraint(
        "state IN ('processing', 'published', 'failed', 'removed')", name="state_known"
    ),
    # An author's posts, newest first: User.posts, feed rebuilds, pull-author merges.
    Index(
        "posts_author_live_idx",
        "author_id",
        text("created_at DESC"),
        text("id DESC"),
        postgresql_where=text(f"{is_live()}"),
    ),
    # An account's deleted posts: its purge (domain.accounts.purge) deletes those too.
    Index("posts_author_deleted_idx", "author_id", postgresql_where=text("deleted_at IS NOT NULL")),
)

#: The captions a post had before: one row per edit (written and replaced times).
post_revisions = Table(
    "post_revisions",
    metadata,
    Column("id", Uuid, primary_key=True),  # UUIDv7
    Column("post_id", Uuid, ForeignKey("posts.id"), nullable=False),
    Column("caption", Text, nullable=False),
    Column("written_at", DateTime(timezone=True), nullable=False),
    Column("replaced_at", DateTime(timezone=True), nullable=False),
    Index("post_revisions_post_recent_idx", "post_id", text("replaced_at DESC"), text("id DESC")),
)
