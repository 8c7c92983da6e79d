"""PostgreSQL state of the feed: each author's push/pull mode (kept for hysteresis)."""

from __future__ import annotations

from sqlalchemy import CheckConstraint, Column, DateTime, ForeignKey, Table, Text, Uuid, func

from domain.db import metadata

#: One row per author who has ever been a pull author; no row means push.
author_feed_modes = Table(
    "author_feed_modes",
    metadata,
    Column("author_id", Uuid, ForeignKey("users.id"), primary_key=True),
    Column("mode", Text, nullable=False),
    Column("changed_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    CheckConstraint("mode IN ('push', 'pull')", name="mode_known"),
)
