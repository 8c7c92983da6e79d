"""The ``reports`` table (docs/api/moderation.md "Reports and moderation")."""

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

from domain.db import metadata

#: Why something is reported (the GraphQL enum ReportReason, upper-cased).
REASONS = (
    "spam",
    "harassment",
    "hate_speech",
    "violence",
    "nudity",
    "self_harm",
    "misinformation",
    "impersonation",
    "intellectual_property",
    "other",
)
#: Reasons only Roost itself files (no reporter): the media worker's known-bad match.
SYSTEM_REASONS = ("known_bad_media",)
#: ``open`` until ``actioned`` (ban or removal) or ``dismissed``.
REPORT_STATUSES = ("open", "actioned", "dismissed")

_REASONS_SQL = ", ".join(f"'{r}'" for r in (*REASONS, *SYSTEM_REASONS))

reports = Table(
    "reports",
    metadata,
    Column("id", Uuid, primary_key=True),  # UUIDv7
    # NULL: filed by Roost itself (SYSTEM_REASONS).
    Column("reporter_id", Uuid, ForeignKey("users.id"), nullable=True),
    Column("subject", Text, nullable=False),  # 'post' or 'user'
    # The reported account, or the reported post's author.
    Column("user_id", Uuid, ForeignKey("users.id"), nullable=False),
    Column("post_id", Uuid, ForeignKey("posts.id"), nullable=True),
    Column("reason", Text, nullable=False),
    Column("note", Text, nullable=False, server_default=""),
    Column("status", Text, nullable=False, server_default="open"),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("resolved_at", DateTime(timezone=True), nullable=True),
    Column("resolved_by", Uuid, ForeignKey("users.id"), nullable=True),
    CheckConstraint("subject IN ('post', 'user')", name="subject_known"),
    CheckConstraint(f"reason IN ({_REASONS_SQL})", name="reason_known"),
    CheckConstraint("status IN ('open', 'actioned', 'dismissed')", name="status_known"),
    CheckConstraint("(subject = 'post') = (post_id IS NOT NULL)", name="post_subject"),
    # One open report per reporter and target: reporting again updates it.
    Index(
        "reports_open_post_key",
        "reporter_id",
        "post_id",
        unique=True,
        postgresql_where=text("status = 'open' AND post_id IS NOT NULL"),
    ),
    Index(
        "reports_open_user_key",
        "reporter_id",
        "user_id",
        unique=True,
        postgresql_where=text("status = 'open' AND post_id IS NULL"),
    ),
    Index("reports_queue_idx", "status", "created_at", "id"),
    # A ban resolves the reports of the account and its posts; a purge deletes them.
    Index("reports_user_id_idx", "user_id"),
    Index("reports_post_id_idx", "post_id", postgresql_where=text("post_id IS NOT NULL")),
    Index("reports_reporter_id_idx", "reporter_id"),
)
