"""The ``uploads`` table: reserved direct uploads and what became of them."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    Table,
    Text,
    Uuid,
    func,
    text,
)

from domain.db import metadata

#: pending -> attached (named by a post) | expired (raw deleted) | failed (bytes refused).
UPLOAD_STATES = ("pending", "uploaded", "processing", "attached", "failed", "expired")

uploads = Table(
    "uploads",
    metadata,
    Column("id", Uuid, primary_key=True),  # UUIDv7; the raw object is raw/<id>
    Column("owner_id", Uuid, ForeignKey("users.id"), nullable=False),
    Column("kind", Text, nullable=False),  # image | video, as declared
    Column("content_type", Text, nullable=False),  # as declared; the worker reads the bytes
    Column("byte_size", BigInteger, nullable=False),  # as declared; the store enforces it
    Column("sha256", Text, nullable=True),  # hex, as declared (optional)
    Column("alt_text", Text, nullable=False, server_default=""),
    Column("state", Text, nullable=False, server_default="pending"),
    Column("post_id", Uuid, ForeignKey("posts.id", ondelete="SET NULL"), nullable=True),
    Column("position", Integer, nullable=True),  # its place among the post's media
    Column("expires_at", DateTime(timezone=True), nullable=False),  # of the signed target
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("failure_reason", Text, nullable=True),
    CheckConstraint("kind IN ('image', 'video')", name="kind_known"),
    CheckConstraint(
        "state IN ('pending', 'uploaded', 'processing', 'attached', 'failed', 'expired')",
        name="state_known",
    ),
    CheckConstraint("byte_size > 0", name="byte_size_positive"),
    Index("uploads_pending_created_idx", "created_at", postgresql_where=text("state = 'pending'")),
    Index("uploads_post_id_idx", "post_id", postgresql_where=text("post_id IS NOT NULL")),
    Index("uploads_owner_id_idx", "owner_id"),
)
