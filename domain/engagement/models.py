"""Tables of likes, comments and hashtags."""

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

likes = Table(
    "likes",
    metadata,
    Column("post_id", Uuid, ForeignKey("posts.id"), nullable=False),
    Column("user_id", Uuid, ForeignKey("users.id"), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("post_id", "user_id"),  # one like per user and post
    Index("likes_post_recent_idx", "post_id", text("created_at DESC"), text("user_id DESC")),
    # An account's likes: what its ban takes out of the counters.
    Index("likes_user_id_idx", "user_id"),
)

comments = Table(
    "comments",
    metadata,
    Column("id", Uuid, primary_key=True),  # UUIDv7
    Column("post_id", Uuid, ForeignKey("posts.id"), nullable=False),
    Column("author_id", Uuid, ForeignKey("users.id"), nullable=False),
    # A reply's top-level comment (one level: a reply's parent has no parent).
    Column("parent_id", Uuid, ForeignKey("comments.id"), nullable=True),
    Column("body", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("deleted_at", DateTime(timezone=True), nullable=True),
    CheckConstraint("parent_id IS NULL OR parent_id <> id", name="not_own_parent"),
    Index(
        "comments_post_top_idx",
        "post_id",
        "created_at",
        "id",
        postgresql_where=text(f"parent_id IS NULL AND {is_live()}"),
    ),
    Index(
        "comments_parent_idx",
        "parent_id",
        "created_at",
        "id",
        postgresql_where=text(f"parent_id IS NOT NULL AND {is_live()}"),
    ),
    # An account's live comments per post: block-hidden counts and bans.
    Index(
        "comments_author_post_idx",
        "author_id",
        "post_id",
        postgresql_where=text(f"{is_live()}"),
    ),
    # Hard-delete (purge) foreign keys, found by index.
    Index("comments_post_id_idx", "post_id"),
    Index("comments_parent_id_idx", "parent_id", postgresql_where=text("parent_id IS NOT NULL")),
    Index(
        "comments_author_deleted_idx", "author_id", postgresql_where=text("deleted_at IS NOT NULL")
    ),
)

hashtags = Table(
    "hashtags",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("name", Text, nullable=False),  # NFKC + casefold, 1-50 code points
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Index("hashtags_name_key", "name", unique=True),
)

post_hashtags = Table(
    "post_hashtags",
    metadata,
    Column("hashtag_id", Uuid, ForeignKey("hashtags.id"), nullable=False),
    Column("post_id", Uuid, ForeignKey("posts.id"), nullable=False),
    # The post's created_at, copied so a tag's posts page newest first by index.
    Column("created_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("hashtag_id", "post_id"),
    Index("post_hashtags_recent_idx", "hashtag_id", text("created_at DESC"), text("post_id DESC")),
    Index("post_hashtags_post_id_idx", "post_id"),
)
