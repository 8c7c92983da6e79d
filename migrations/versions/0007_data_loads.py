"""data_loads: which bulk datasets (the real graph, seeded posts) a database holds.

``roost run`` loads the graph and seeds posts when their row is missing, not when a
table is empty. A database migrated from before this revision that already holds the
imported graph (or posts) gets the rows it would have had, so it is not loaded again.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""
import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "data_loads",
        sa.Column("dataset", sa.Text(), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("md5", sa.Text(), nullable=True),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("loaded_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.PrimaryKeyConstraint("dataset", name="data_loads_pkey"),
    )
    op.execute(
        "INSERT INTO data_loads (dataset, source, summary)"
        " SELECT 'graph', 'before migration 0007', 'imported follows present'"
        " WHERE EXISTS (SELECT 1 FROM follows WHERE source = 'import')"
    )
    op.execute(
        "INSERT INTO data_loads (dataset, source, summary)"
        " SELECT 'seed_posts', 'before migration 0007', 'posts present'"
        " WHERE EXISTS (SELECT 1 FROM follows WHERE source = 'import')"
        " AND EXISTS (SELECT 1 FROM posts)"
    )


def downgrade() -> None:
    op.drop_table("data_loads")
