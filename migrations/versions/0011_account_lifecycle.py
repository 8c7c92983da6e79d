"""The account lifecycle: deletion with a grace period, data exports, mutes, the blocked
list's order, reports and the moderator role.

``users.status`` gains ``pending_deletion`` (hidden like a ban: docs/api/account-lifecycle.md "Account
lifecycle"), with ``deletion_due_at`` (when the purge may run) and ``purged_at`` (when
it finished); ``is_moderator`` is the moderator role.

Revision ID: 0011
Revises: 0007
Create Date: 2026-12-10
"""
import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0007"
branch_labels = None
depends_on = None

_REASONS = (
    "'spam', 'harassment', 'hate_speech', 'violence', 'nudity', 'self_harm', "
    "'misinformation', 'impersonation', 'intellectual_property', 'other'"
)


def upgrade() -> None:
    op.drop_constraint("users_status_known_check", "users", type_="check")
    op.create_check_constraint(
        "users_status_known_check",
        "users",
        "status IN ('active', 'banned', 'pending_deletion', 'deleted')",
    )
    op.add_column("users", sa.Column("deletion_due_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("users", sa.Column("purged_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column(
        "users",
        sa.Column("is_moderator", sa.Boolean(), server_default=sa.false(), nullable=False),
    )
    # The purge's work list: accounts whose deletion is due and not yet carried out.
    op.create_index(
        "users_deletion_due_idx", "users", ["deletion_due_at"],
        postgresql_where=sa.text("deletion_due_at IS NOT NULL AND purged_at IS NULL"),
    )

    # A purge hard-deletes an account's rows: what it deletes is found by index, and so
    # are the rows the foreign-key checks of those deletes look for.
    op.create_index(
        "posts_author_deleted_idx", "posts", ["author_id"],
        postgresql_where=sa.text("deleted_at IS NOT NULL"),
    )
    op.create_index("comments_post_id_idx", "comments", ["post_id"])
    op.create_index(
        "comments_parent_id_idx", "comments", ["parent_id"],
        postgresql_where=sa.text("parent_id IS NOT NULL"),
    )
    op.create_index(
        "comments_author_deleted_idx", "comments", ["author_id"],
        postgresql_where=sa.text("deleted_at IS NOT NULL"),
    )
    op.create_index(
        "notifications_post_id_idx", "notifications", ["post_id"],
        postgresql_where=sa.text("post_id IS NOT NULL"),
    )
    op.create_index(
        "notifications_comment_id_idx", "notifications", ["comment_id"],
        postgresql_where=sa.text("comment_id IS NOT NULL"),
    )
    op.create_index(
        "follows_follower_gone_idx", "follows", ["follower_id"],
        postgresql_where=sa.text("deleted_at IS NOT NULL"),
    )
    op.create_index(
        "follows_followee_gone_idx", "follows", ["followee_id"],
        postgresql_where=sa.text("deleted_at IS NOT NULL"),
    )

    # The blocked list, newest first (keyset on created_at, blocked_id).
    op.create_index(
        "blocks_blocker_recent_idx", "blocks",
        ["blocker_id", sa.text("created_at DESC"), sa.text("blocked_id DESC")],
    )

    op.create_table(
        "mutes",
        sa.Column("muter_id", sa.Uuid(), nullable=False),
        sa.Column("muted_id", sa.Uuid(), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("muter_id <> muted_id", name="mutes_no_self_mute_check"),
        sa.ForeignKeyConstraint(["muter_id"], ["users.id"], name="mutes_muter_id_fkey"),
        sa.ForeignKeyConstraint(["muted_id"], ["users.id"], name="mutes_muted_id_fkey"),
        sa.PrimaryKeyConstraint("muter_id", "muted_id", name="mutes_pkey"),
    )
    op.create_index(
        "mutes_muter_recent_idx", "mutes",
        ["muter_id", sa.text("created_at DESC"), sa.text("muted_id DESC")],
    )
    op.create_index("mutes_muted_id_idx", "mutes", ["muted_id"])

    op.create_table(
        "reports",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("reporter_id", sa.Uuid(), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("post_id", sa.Uuid(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("note", sa.Text(), server_default="", nullable=False),
        sa.Column("status", sa.Text(), server_default="open", nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("resolved_by", sa.Uuid(), nullable=True),
        sa.CheckConstraint("subject IN ('post', 'user')", name="reports_subject_known_check"),
        sa.CheckConstraint(f"reason IN ({_REASONS})", name="reports_reason_known_check"),
        sa.CheckConstraint(
            "status IN ('open', 'actioned', 'dismissed')", name="reports_status_known_check"
        ),
        sa.CheckConstraint(
            "(subject = 'post') = (post_id IS NOT NULL)", name="reports_post_subject_check"
        ),
        sa.ForeignKeyConstraint(["reporter_id"], ["users.id"], name="reports_reporter_id_fkey"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name="reports_user_id_fkey"),
        sa.ForeignKeyConstraint(["post_id"], ["posts.id"], name="reports_post_id_fkey"),
        sa.ForeignKeyConstraint(["resolved_by"], ["users.id"], name="reports_resolved_by_fkey"),
        sa.PrimaryKeyConstraint("id", name="reports_pkey"),
    )
    op.create_index(
        "reports_open_post_key", "reports", ["reporter_id", "post_id"], unique=True,
        postgresql_where=sa.text("status = 'open' AND post_id IS NOT NULL"),
    )
    op.create_index(
        "reports_open_user_key", "reports", ["reporter_id", "user_id"], unique=True,
        postgresql_where=sa.text("status = 'open' AND post_id IS NULL"),
    )
    op.create_index("reports_queue_idx", "reports", ["status", "created_at", "id"])
    op.create_index("reports_user_id_idx", "reports", ["user_id"])
    op.create_index(
        "reports_post_id_idx", "reports", ["post_id"],
        postgresql_where=sa.text("post_id IS NOT NULL"),
    )
    op.create_index("reports_reporter_id_idx", "reports", ["reporter_id"])

    op.create_table(
        "data_exports",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("status", sa.Text(), server_default="pending", nullable=False),
        sa.Column(
            "requested_at", sa.DateTime(timezone=True), server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("ready_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("size_bytes", sa.BigInteger(), nullable=True),
        sa.Column("archive", sa.LargeBinary(), nullable=True),
        sa.CheckConstraint(
            "status IN ('pending', 'ready')", name="data_exports_status_known_check"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], ondelete="CASCADE", name="data_exports_user_id_fkey"
        ),
        sa.PrimaryKeyConstraint("id", name="data_exports_pkey"),
    )
    # The archive is gzip already: stored out of line without compression, so the
    # download reads it slice by slice (substring) without de-TOASTing all of it.
    op.execute("ALTER TABLE data_exports ALTER COLUMN archive SET STORAGE EXTERNAL")
    op.create_index(
        "data_exports_user_recent_idx", "data_exports",
        ["user_id", sa.text("requested_at DESC")],
    )
    op.create_index(
        "data_exports_pending_key", "data_exports", ["user_id"], unique=True,
        postgresql_where=sa.text("status = 'pending'"),
    )
    op.create_index(
        "data_exports_expires_idx", "data_exports", ["expires_at"],
        postgresql_where=sa.text("expires_at IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_table("data_exports")
    op.drop_table("reports")
    op.drop_table("mutes")
    op.drop_index("blocks_blocker_recent_idx", table_name="blocks")
    for name, table in (
        ("follows_followee_gone_idx", "follows"),
        ("follows_follower_gone_idx", "follows"),
        ("notifications_comment_id_idx", "notifications"),
        ("notifications_post_id_idx", "notifications"),
        ("comments_author_deleted_idx", "comments"),
        ("comments_parent_id_idx", "comments"),
        ("comments_post_id_idx", "comments"),
        ("posts_author_deleted_idx", "posts"),
    ):
        op.drop_index(name, table_name=table)
    op.drop_index("users_deletion_due_idx", table_name="users")
    op.drop_column("users", "is_moderator")
    op.drop_column("users", "purged_at")
    op.drop_column("users", "deletion_due_at")
    op.drop_constraint("users_status_known_check", "users", type_="check")
    op.create_check_constraint(
        "users_status_known_check", "users", "status IN ('active', 'banned', 'deleted')"
    )
