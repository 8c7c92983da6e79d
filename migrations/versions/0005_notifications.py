"""Notifications: in-app notifications and the events that produced them.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""
import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

KINDS = "'follow', 'follow_digest', 'follow_request', 'like', 'comment', 'reply', 'mention'"
OUTCOMES = "'notified', 'merged', 'overflow', 'repeat'"


def upgrade() -> None:
    op.create_table(
        "notifications",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("recipient_id", sa.Uuid(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("actor_id", sa.Uuid(), nullable=True),
        sa.Column("post_id", sa.Uuid(), nullable=True),
        sa.Column("comment_id", sa.Uuid(), nullable=True),
        sa.Column("count", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.Column("source_event_id", sa.Uuid(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("read_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(f"kind IN ({KINDS})", name="notifications_kind_known_check"),
        sa.CheckConstraint("count >= 1", name="notifications_count_positive_check"),
        sa.ForeignKeyConstraint(["recipient_id"], ["users.id"], name="notifications_recipient_id_fkey"),
        sa.ForeignKeyConstraint(["actor_id"], ["users.id"], name="notifications_actor_id_fkey"),
        sa.ForeignKeyConstraint(["post_id"], ["posts.id"], name="notifications_post_id_fkey"),
        sa.ForeignKeyConstraint(["comment_id"], ["comments.id"], name="notifications_comment_id_fkey"),
        sa.PrimaryKeyConstraint("id", name="notifications_pkey"),
    )
    op.create_index(
        "notifications_source_key", "notifications",
        ["source_event_id", "recipient_id", "kind"], unique=True,
    )
    op.create_index(
        "notifications_recipient_recent_idx", "notifications",
        ["recipient_id", sa.text("created_at DESC"), sa.text("id DESC")],
    )
    op.create_index(
        "notifications_unread_idx", "notifications", ["recipient_id"],
        postgresql_where=sa.text("read_at IS NULL"),
    )
    op.create_index(
        "notifications_like_groups_idx", "notifications", ["post_id", sa.text("created_at DESC")],
        postgresql_where=sa.text("kind = 'like'"),
    )

    op.create_table(
        "notification_sources",
        sa.Column("source_event_id", sa.Uuid(), nullable=False),
        sa.Column("recipient_id", sa.Uuid(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("actor_id", sa.Uuid(), nullable=True),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("outcome", sa.Text(), nullable=False),
        sa.Column("notification_id", sa.Uuid(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.CheckConstraint(f"outcome IN ({OUTCOMES})", name="notification_sources_outcome_known_check"),
        sa.PrimaryKeyConstraint(
            "source_event_id", "recipient_id", "kind", name="notification_sources_pkey"
        ),
    )
    op.create_index(
        "notification_sources_follows_notified_idx", "notification_sources",
        ["recipient_id", "day"],
        postgresql_where=sa.text("kind = 'follow' AND outcome = 'notified'"),
    )
    op.create_index(
        "notification_sources_overflow_idx", "notification_sources", ["day", "recipient_id"],
        postgresql_where=sa.text("outcome = 'overflow'"),
    )
    op.create_index("notification_sources_day_idx", "notification_sources", ["day"])


def downgrade() -> None:
    op.drop_table("notification_sources")
    op.drop_table("notifications")
