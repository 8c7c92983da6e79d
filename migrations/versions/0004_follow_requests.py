"""Follow requests to private accounts.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""
import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "follow_requests",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("requester_id", sa.Uuid(), nullable=False),
        sa.Column("target_id", sa.Uuid(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.CheckConstraint("requester_id <> target_id", name="follow_requests_no_self_request_check"),
        sa.ForeignKeyConstraint(["requester_id"], ["users.id"], name="follow_requests_requester_id_fkey"),
        sa.ForeignKeyConstraint(["target_id"], ["users.id"], name="follow_requests_target_id_fkey"),
        sa.PrimaryKeyConstraint("id", name="follow_requests_pkey"),
    )
    op.create_index(
        "follow_requests_pair_key", "follow_requests", ["requester_id", "target_id"], unique=True
    )
    op.create_index(
        "follow_requests_target_recent_idx", "follow_requests",
        ["target_id", sa.text("created_at DESC"), sa.text("id DESC")],
    )


def downgrade() -> None:
    op.drop_table("follow_requests")
