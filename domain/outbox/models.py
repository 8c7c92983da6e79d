"""The ``outbox`` table (design.md "Data": every mutating use case appends a row)."""

from __future__ import annotations

from sqlalchemy import Column, DateTime, Index, Table, Text, Uuid, func, text
from sqlalchemy.dialects.postgresql import JSONB

from domain.db import metadata

outbox = Table(
    "outbox",
    metadata,
    Column("id", Uuid, primary_key=True),  # UUIDv7: also the event's order
    Column("topic", Text, nullable=False),  # e.g. follow.created, follow.removed
    Column("aggregate_id", Uuid, nullable=False),
    Column("payload", JSONB, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("dispatched_at", DateTime(timezone=True), nullable=True),
    # The relay's work list: undispatched rows, oldest first.
    Index("outbox_pending_idx", "id", postgresql_where=text("dispatched_at IS NULL")),
)
