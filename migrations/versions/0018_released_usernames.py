"""Released usernames: a purged account's username is held for a while
(``released_usernames``: username, reserved_until) before anyone may sign up with it.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "released_usernames",
        sa.Column("username", sa.Text(), nullable=False),
        sa.Column("reserved_until", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("username", name="released_usernames_pkey"),
    )


def downgrade() -> None:
    op.drop_table("released_usernames")
