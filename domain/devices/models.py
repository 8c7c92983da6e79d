"""The ``device_tokens`` table: push tokens of app installs, per user and session."""

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
)

from domain.db import metadata

#: Where a token comes from (the GraphQL enum DevicePlatform, upper-cased).
PLATFORMS = ("ios", "android", "web")

#: Longest token accepted, in characters (FCM registration tokens are ~160-250).
TOKEN_MAX = 4096

device_tokens = Table(
    "device_tokens",
    metadata,
    Column("id", Uuid, primary_key=True),  # UUIDv7
    Column("user_id", Uuid, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    # Log-out of this session removes the token; not a foreign key (sessions are never deleted).
    Column("session_id", Uuid, nullable=False),
    Column("platform", Text, nullable=False),
    Column("token", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("registered_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    CheckConstraint("platform IN ('ios', 'android', 'web')", name="platform_known"),
    CheckConstraint(f"length(token) BETWEEN 1 AND {TOKEN_MAX}", name="token_length"),
    # A token names one app install: registering it again (any user) moves the row.
    Index("device_tokens_token_key", "token", unique=True),
    Index("device_tokens_user_id_idx", "user_id"),
    Index("device_tokens_session_id_idx", "session_id"),
)
