"""Posts, author feed modes, dead letters; the outbox gets a due time.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "posts",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("author_id", sa.Uuid(), nullable=False),
        sa.Column("caption", sa.Text(), server_default="", nullable=False),
        sa.Column("media", postgresql.JSONB(), server_default=sa.text("'[]'::jsonb"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["author_id"], ["users.id"], name="posts_author_id_fkey"),
        sa.PrimaryKeyConstraint("id", name="posts_pkey"),
    )
    op.create_index(
        "posts_author_live_idx", "posts",
        ["author_id", sa.text("created_at DESC"), sa.text("id DESC")],
        postgresql_where=sa.text("deleted_at IS NULL"),
    )

    op.create_table(
        "author_feed_modes",
        sa.Column("author_id", sa.Uuid(), nullable=False),
        sa.Column("mode", sa.Text(), nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.CheckConstraint("mode IN ('push', 'pull')", name="author_feed_modes_mode_known_check"),
        sa.ForeignKeyConstraint(["author_id"], ["users.id"], name="author_feed_modes_author_id_fkey"),
        sa.PrimaryKeyConstraint("author_id", name="author_feed_modes_pkey"),
    )

    op.create_table(
        "dead_letters",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("event_id", sa.Uuid(), nullable=False),
        sa.Column("topic", sa.Text(), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("replayed_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="dead_letters_pkey"),
    )
    op.create_index(
        "dead_letters_open_idx", "dead_letters", ["created_at"],
        postgresql_where=sa.text("replayed_at IS NULL"),
    )

    op.add_column(
        "outbox",
        sa.Column("available_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    )
    op.drop_index("outbox_pending_idx", table_name="outbox")
    op.create_index(
        "outbox_due_idx", "outbox", ["available_at"], postgresql_where=sa.text("dispatched_at IS NULL")
    )


def downgrade() -> None:
    op.drop_index("outbox_due_idx", table_name="outbox")
    op.create_index("outbox_pending_idx", "outbox", ["id"], postgresql_where=sa.text("dispatched_at IS NULL"))
    op.drop_column("outbox", "available_at")
    op.drop_table("dead_letters")
    op.drop_table("author_feed_modes")
    op.drop_table("posts")
