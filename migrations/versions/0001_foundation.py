"""Foundation: users, sessions, follows, blocks, counter shards, outbox.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("username", sa.Text(), nullable=False),
        sa.Column("email", sa.Text(), nullable=True),
        sa.Column("display_name", sa.Text(), nullable=False),
        sa.Column("bio", sa.Text(), server_default="", nullable=False),
        sa.Column("password_hash", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), server_default="active", nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("last_active_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("username ~ '^[a-z0-9._]{3,30}$'", name="users_username_format_check"),
        sa.CheckConstraint("status IN ('active', 'banned', 'deleted')", name="users_status_known_check"),
        sa.PrimaryKeyConstraint("id", name="users_pkey"),
    )
    op.create_index("users_username_key", "users", ["username"], unique=True)
    op.create_index(
        "users_email_key", "users", ["email"], unique=True, postgresql_where=sa.text("email IS NOT NULL")
    )

    op.create_table(
        "sessions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("token_hash", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name="sessions_user_id_fkey", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="sessions_pkey"),
    )
    op.create_index("sessions_token_hash_key", "sessions", ["token_hash"], unique=True)
    op.create_index("sessions_user_id_idx", "sessions", ["user_id"])

    op.create_table(
        "follows",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("follower_id", sa.Uuid(), nullable=False),
        sa.Column("followee_id", sa.Uuid(), nullable=False),
        sa.Column("source", sa.Text(), server_default="profile", nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("follower_id <> followee_id", name="follows_no_self_follow_check"),
        sa.ForeignKeyConstraint(["follower_id"], ["users.id"], name="follows_follower_id_fkey"),
        sa.ForeignKeyConstraint(["followee_id"], ["users.id"], name="follows_followee_id_fkey"),
        sa.PrimaryKeyConstraint("id", name="follows_pkey"),
    )
    op.create_index(
        "follows_pair_live_idx", "follows", ["follower_id", "followee_id"], unique=True,
        postgresql_where=sa.text("deleted_at IS NULL"),
    )
    op.create_index(
        "follows_followee_live_idx", "follows",
        ["followee_id", sa.text("created_at DESC"), sa.text("id DESC")],
        postgresql_where=sa.text("deleted_at IS NULL"),
    )
    op.create_index(
        "follows_follower_live_idx", "follows",
        ["follower_id", sa.text("created_at DESC"), sa.text("id DESC")],
        postgresql_where=sa.text("deleted_at IS NULL"),
    )

    op.create_table(
        "blocks",
        sa.Column("blocker_id", sa.Uuid(), nullable=False),
        sa.Column("blocked_id", sa.Uuid(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.CheckConstraint("blocker_id <> blocked_id", name="blocks_no_self_block_check"),
        sa.ForeignKeyConstraint(["blocker_id"], ["users.id"], name="blocks_blocker_id_fkey"),
        sa.ForeignKeyConstraint(["blocked_id"], ["users.id"], name="blocks_blocked_id_fkey"),
        sa.PrimaryKeyConstraint("blocker_id", "blocked_id", name="blocks_pkey"),
    )
    op.create_index("blocks_blocked_id_idx", "blocks", ["blocked_id"])

    op.create_table(
        "counter_shards",
        sa.Column("entity_id", sa.Uuid(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("shard", sa.SmallInteger(), nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("entity_id", "kind", "shard", name="counter_shards_pkey"),
    )

    op.create_table(
        "outbox",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("topic", sa.Text(), nullable=False),
        sa.Column("aggregate_id", sa.Uuid(), nullable=False),
        sa.Column("payload", postgresql.JSONB(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("dispatched_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="outbox_pkey"),
    )
    op.create_index(
        "outbox_pending_idx", "outbox", ["id"], postgresql_where=sa.text("dispatched_at IS NULL")
    )


def downgrade() -> None:
    for table in ("outbox", "counter_shards", "blocks", "follows", "sessions", "users"):
        op.drop_table(table)
