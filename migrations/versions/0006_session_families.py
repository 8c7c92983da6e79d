"""Session families: refresh-token rotation with a grace window, and sessions that end.

A row of ``sessions`` is one refresh token; the rows that rotation chains from one
sign-in share ``family_id`` (the first row's id), which access tokens carry as their
``sid``. ``rotated_at`` marks a token already exchanged for its successor.

Revision ID: 0006
Revises: 0008
Create Date: 2026-11-30
"""
import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("sessions", sa.Column("family_id", sa.Uuid(), nullable=True))
    op.add_column("sessions", sa.Column("rotated_at", sa.DateTime(timezone=True), nullable=True))
    op.execute("UPDATE sessions SET family_id = id")
    op.alter_column("sessions", "family_id", nullable=False)
    op.create_index("sessions_family_id_idx", "sessions", ["family_id"])


def downgrade() -> None:
    op.drop_index("sessions_family_id_idx", table_name="sessions")
    op.drop_column("sessions", "rotated_at")
    op.drop_column("sessions", "family_id")
