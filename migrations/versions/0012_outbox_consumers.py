"""A job per (event, consumer): each consumer's done marker, and the consumer a dead
letter belongs to.

``outbox_consumers`` holds one row per (event, consumer) that finished (``done``) or
was dead-lettered (``dead``); an event is ``dispatched_at`` once every consumer of its
type has a row. ``dead_letters.consumer`` names the consumer that failed (NULL for the
dead letters of before, which re-drive every consumer of their event).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-30
"""
import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "outbox_consumers",
        sa.Column("event_id", sa.Uuid(), nullable=False),
        sa.Column("consumer", sa.Text(), nullable=False),
        sa.Column("outcome", sa.Text(), nullable=False),
        sa.Column(
            "finished_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.PrimaryKeyConstraint("event_id", "consumer"),
        sa.ForeignKeyConstraint(["event_id"], ["outbox.id"], ondelete="CASCADE"),
        sa.CheckConstraint("outcome IN ('done', 'dead')", name="outbox_consumers_outcome_check"),
    )
    op.add_column("dead_letters", sa.Column("consumer", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("dead_letters", "consumer")
    op.drop_table("outbox_consumers")
