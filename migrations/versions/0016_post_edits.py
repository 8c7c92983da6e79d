"""Editing a post's caption: ``posts.edited_at`` (null: never edited) and
``post_revisions``, one row per edit holding the caption it replaced, when that caption
was written and when it was replaced (Post.editHistory pages it newest first).

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-02
"""
import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("posts", sa.Column("edited_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "post_revisions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("post_id", sa.Uuid(), nullable=False),
        sa.Column("caption", sa.Text(), nullable=False),
        sa.Column("written_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("replaced_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="post_revisions_pkey"),
        sa.ForeignKeyConstraint(["post_id"], ["posts.id"], name="post_revisions_post_id_fkey"),
    )
    op.create_index(
        "post_revisions_post_recent_idx",
        "post_revisions",
        ["post_id", sa.text("replaced_at DESC"), sa.text("id DESC")],
    )


def downgrade() -> None:
    op.drop_table("post_revisions")
    op.drop_column("posts", "edited_at")
