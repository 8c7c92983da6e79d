"""The ``outbox`` table (docs/design.md "Data": every mutating use case appends a row)."""

from __future__ import annotations

from sqlalchemy import (
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
    # When the relay may (re-)enqueue the row: a use case that enqueues right after its
    # commit sets it a little ahead, so the relay only re-drives what that missed.
    Column("available_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("dispatched_at", DateTime(timezone=True), nullable=True),  # consumer done
    Index("outbox_due_idx", "available_at", postgresql_where=text("dispatched_at IS NULL")),
)

#: One row per finished (event, consumer): ``done`` or ``dead``; all present = dispatched.
outbox_consumers = Table(
    "outbox_consumers",
    metadata,
    Column("event_id", Uuid, ForeignKey("outbox.id", ondelete="CASCADE"), primary_key=True),
    Column("consumer", Text, primary_key=True),
    Column("outcome", Text, nullable=False),
    Column("finished_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    CheckConstraint("outcome IN ('done', 'dead')", name="outbox_consumers_outcome_check"),
)

#: Events whose consumer failed every attempt; ``roost dlq replay`` re-drives them.
dead_letters = Table(
    "dead_letters",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("event_id", Uuid, nullable=False),  # the outbox row that failed
    Column("topic", Text, nullable=False),
    Column("consumer", Text, nullable=True),  # NULL: before jobs per consumer (all of them)
    Column("error", Text, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("replayed_at", DateTime(timezone=True), nullable=True),
    Index("dead_letters_open_idx", "created_at", postgresql_where=text("replayed_at IS NULL")),
)
