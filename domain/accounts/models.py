"""The ``data_exports`` table (docs/api/account-lifecycle.md "Account lifecycle")."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Index,
    LargeBinary,
    Table,
    Text,
    Uuid,
    func,
    text,
)

from domain.db import metadata

#: ``pending`` until the worker stored the archive, then ``ready`` until ``expires_at``.
EXPORT_STATUSES = ("pending", "ready")

data_exports = Table(
    "data_exports",
    metadata,
    Column("id", Uuid, primary_key=True),  # UUIDv7
    Column("user_id", Uuid, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("status", Text, nullable=False, server_default="pending"),
    Column("requested_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("ready_at", DateTime(timezone=True), nullable=True),
    # The archive is deleted after this (DATA_EXPORT_RETENTION_HOURS after ready_at).
    Column("expires_at", DateTime(timezone=True), nullable=True),
    Column("size_bytes", BigInteger, nullable=True),
    # gzip JSON, STORAGE EXTERNAL (migration 0011) so downloads read slices.
    Column("archive", LargeBinary, nullable=True),
    CheckConstraint("status IN ('pending', 'ready')", name="status_known"),
    Index("data_exports_user_recent_idx", "user_id", text("requested_at DESC")),
    # One export in preparation per user: asking again while it is returns it.
    Index(
        "data_exports_pending_key",
        "user_id",
        unique=True,
        postgresql_where=text("status = 'pending'"),
    ),
    Index(
        "data_exports_expires_idx",
        "expires_at",
        postgresql_where=text("expires_at IS NOT NULL"),
    ),
)
