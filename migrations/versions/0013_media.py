"""Media uploads and the post's lifecycle (docs/api/media.md "Media").

``uploads``: one reserved direct upload (its raw object is ``raw/<id>`` in the object
store's quarantine), owned by the account that reserved it, ``pending`` until a post
names it (``attached``), then ``processing``/``attached`` until the media worker is done;
``expired`` when nobody used it within the hour, ``failed`` when its bytes were refused.
``posts.state``: ``processing`` (only its author sees it), ``published``, ``failed``
(with ``failure_reason``) or ``removed`` (known-bad media); every existing post is
published. Reports gain ``known_bad_media`` with no reporter (the media worker files
them). Notifications gain the author's ``post_published`` and ``post_failed``.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""
import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_OLD_REASONS = (
    "spam", "harassment", "hate_speech", "violence", "nudity", "self_harm",
    "misinformation", "impersonation", "intellectual_property", "other",
)
_NEW_REASONS = (*_OLD_REASONS, "known_bad_media")
_OLD_KINDS = ("follow", "follow_digest", "follow_request", "like", "comment", "reply", "mention")
_NEW_KINDS = (*_OLD_KINDS, "post_published", "post_failed")


def _kinds(kinds: tuple[str, ...], column: str = "kind") -> str:
    return f"{column} IN (" + ", ".join(f"'{k}'" for k in kinds) + ")"


def upgrade() -> None:
    op.add_column(
        "posts", sa.Column("state", sa.Text(), nullable=False, server_default="published")
    )
    op.add_column("posts", sa.Column("failure_reason", sa.Text(), nullable=True))
    op.add_column("posts", sa.Column("published_at", sa.DateTime(timezone=True), nullable=True))
    op.execute("UPDATE posts SET published_at = created_at")
    op.create_check_constraint(
        "posts_state_known_check",
        "posts",
        "state IN ('processing', 'published', 'failed', 'removed')",
    )
    op.create_table(
        "uploads",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("owner_id", sa.Uuid(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("content_type", sa.Text(), nullable=False),
        sa.Column("byte_size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.Text(), nullable=True),
        sa.Column("alt_text", sa.Text(), nullable=False, server_default=""),
        sa.Column("state", sa.Text(), nullable=False, server_default="pending"),
        sa.Column("post_id", sa.Uuid(), nullable=True),
        sa.Column("position", sa.Integer(), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.Column("failure_reason", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="uploads_pkey"),
        sa.ForeignKeyConstraint(["owner_id"], ["users.id"], name="uploads_owner_id_fkey"),
        sa.ForeignKeyConstraint(
            ["post_id"], ["posts.id"], name="uploads_post_id_fkey", ondelete="SET NULL"
        ),
        sa.CheckConstraint("kind IN ('image', 'video')", name="uploads_kind_known_check"),
        sa.CheckConstraint(
            "state IN ('pending', 'uploaded', 'processing', 'attached', 'failed', 'expired')",
            name="uploads_state_known_check",
        ),
        sa.CheckConstraint("byte_size > 0", name="uploads_byte_size_positive_check"),
    )
    op.create_index(
        "uploads_pending_created_idx",
        "uploads",
        ["created_at"],
        postgresql_where=sa.text("state = 'pending'"),
    )
    op.create_index(
        "uploads_post_id_idx", "uploads", ["post_id"], postgresql_where=sa.text("post_id IS NOT NULL")
    )
    op.create_index("uploads_owner_id_idx", "uploads", ["owner_id"])
    op.drop_constraint("notifications_kind_known_check", "notifications", type_="check")
    op.create_check_constraint("notifications_kind_known_check", "notifications", _kinds(_NEW_KINDS))
    # A report the media worker files (known-bad media) has no reporter.
    op.alter_column("reports", "reporter_id", nullable=True)
    op.drop_constraint("reports_reason_known_check", "reports", type_="check")
    op.create_check_constraint(
        "reports_reason_known_check", "reports", _kinds(_NEW_REASONS, "reason")
    )


def downgrade() -> None:
    op.execute("DELETE FROM reports WHERE reporter_id IS NULL OR reason = 'known_bad_media'")
    op.drop_constraint("reports_reason_known_check", "reports", type_="check")
    op.create_check_constraint(
        "reports_reason_known_check", "reports", _kinds(_OLD_REASONS, "reason")
    )
    op.alter_column("reports", "reporter_id", nullable=False)
    op.execute("DELETE FROM notifications WHERE kind IN ('post_published', 'post_failed')")
    op.drop_constraint("notifications_kind_known_check", "notifications", type_="check")
    op.create_check_constraint("notifications_kind_known_check", "notifications", _kinds(_OLD_KINDS))
    op.drop_table("uploads")
    op.drop_constraint("posts_state_known_check", "posts", type_="check")
    op.drop_column("posts", "published_at")
    op.drop_column("posts", "failure_reason")
    op.drop_column("posts", "state")
