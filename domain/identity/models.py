"""Identity tables: ``users``, ``sessions`` (refresh tokens; a family is one signed-in session) and
``email_tokens``."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Index,
    LargeBinary,
    Table,
    Text,
    Uuid,
    false,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from domain.db import metadata

#: Account states; only ``active`` accounts are seen or act (docs/api/account-lifecycle.md
#: "Account lifecycle").
USER_STATUSES = ("active", "banned", "pending_deletion", "deleted")

users = Table(
    "users",
    metadata,
    Column("id", Uuid, primary_key=True),
    # canonical lower-case form, ^[a-z0-9._]{3,30}$ (docs/design.md "Decided details")
    Column("username", Text, nullable=False),
    Column("email", Text, nullable=True),
    # When the owner proved ``email`` theirs (verifyEmail); NULL again when it changes.
    Column("email_verified_at", DateTime(timezone=True), nullable=True),
    Column("display_name", Text, nullable=False),
    Column("bio", Text, nullable=False, server_default=""),
    Column("password_hash", Text, nullable=False),
    Column("status", Text, nullable=False, server_default="active"),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("last_active_at", DateTime(timezone=True), nullable=True),
    # Private accounts: only approved followers see their posts and follow lists.
    Column("is_private", Boolean, nullable=False, server_default=false()),
    # Account deletion (domain.accounts): when the purge may run, and when it finished.
    Column("deletion_due_at", DateTime(timezone=True), nullable=True),
    Column("purged_at", DateTime(timezone=True), nullable=True),
    # The moderator role (``roost admin grant-moderator``): reads reports, bans, removes.
    Column("is_moderator", Boolean, nullable=False, server_default=false()),
    # website: domain.identity.website; avatar: {"uploadId", "blurhash", "variants"} or null.
    Column("website", Text, nullable=True),
    Column("avatar", JSONB, nullable=True),
    Column("avatar_upload_id", Uuid, nullable=True),
    CheckConstraint("username ~ '^[a-z0-9._]{3,30}$'", name="username_format"),
    CheckConstraint(
        "status IN ('active', 'banned', 'pending_deletion', 'deleted')", name="status_known"
    ),
    Index("users_username_key", "username", unique=True),
    Index("users_email_key", "email", unique=True, postgresql_where=text("email IS NOT NULL")),
    Index(
        "users_deletion_due_idx",
        "deletion_due_at",
        postgresql_where=text("deletion_due_at IS NOT NULL AND purged_at IS NULL"),
    ),
)

sessions = Table(
    "sessions",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("user_id", Uuid, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    # SHA-256 of the opaque refresh token; the token itself is never stored
    Column("token_hash", LargeBinary, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("revoked_at", DateTime(timezone=True), nullable=True),
    # The family (first row's id), the access token's ``sid``; ending a session revokes it.
    Column("family_id", Uuid, nullable=False),
    # When this token was exchanged for its successor (refresh_session.py).
    Column("rotated_at", DateTime(timezone=True), nullable=True),
    Index("sessions_token_hash_key", "token_hash", unique=True),
    Index("sessions_user_id_idx", "user_id"),
    Index("sessions_family_id_idx", "family_id"),
)

#: What an e-mail token proves: ``verify_email`` or ``reset_password``.
EMAIL_TOKEN_PURPOSES = ("verify_email", "reset_password")

email_tokens = Table(
    "email_tokens",
    metadata,
    # The id of the outbox event that asked for the mail: a retried job finds its token.
    Column("id", Uuid, primary_key=True),
    Column("user_id", Uuid, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("purpose", Text, nullable=False),
    # The address the mail went to (a verification holds only while it is the account's).
    Column("email", Text, nullable=False),
    # SHA-256 of the token; the token itself is an HMAC of the id, never stored.
    Column("token_hash", LargeBinary, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("used_at", DateTime(timezone=True), nullable=True),
    CheckConstraint("purpose IN ('verify_email', 'reset_password')", name="purpose_known"),
    Index("email_tokens_token_hash_key", "token_hash", unique=True),
    Index("email_tokens_user_id_purpose_created_at_idx", "user_id", "purpose", "created_at"),
)

#: Usernames of purged accounts, refused by sign-up until ``reserved_until``.
released_usernames = Table(
    "released_usernames",
    metadata,
    Column("username", Text, primary_key=True),
    Column("reserved_until", DateTime(timezone=True), nullable=False),
)
