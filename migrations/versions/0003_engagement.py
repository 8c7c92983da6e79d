"""Engagement: likes, comments with one level of replies, hashtags.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""
import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Private accounts: only approved followers see their posts and lists.
    op.add_column(
        "users", sa.Column("is_private", sa.Boolean(), server_default=sa.false(), nullable=False)
    )
    op.create_table(
        "likes",
        sa.Column("post_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.ForeignKeyConstraint(["post_id"], ["posts.id"], name="likes_post_id_fkey"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name="likes_user_id_fkey"),
        sa.PrimaryKeyConstraint("post_id", "user_id", name="likes_pkey"),
    )
    op.create_index(
        "likes_post_recent_idx", "likes", ["post_id", sa.text("created_at DESC"), sa.text("user_id DESC")]
    )

    op.create_table(
        "comments",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("post_id", sa.Uuid(), nullable=False),
        sa.Column("author_id", sa.Uuid(), nullable=False),
        sa.Column("parent_id", sa.Uuid(), nullable=True),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("parent_id IS NULL OR parent_id <> id", name="comments_not_own_parent_check"),
        sa.ForeignKeyConstraint(["post_id"], ["posts.id"], name="comments_post_id_fkey"),
        sa.ForeignKeyConstraint(["author_id"], ["users.id"], name="comments_author_id_fkey"),
        sa.ForeignKeyConstraint(["parent_id"], ["comments.id"], name="comments_parent_id_fkey"),
        sa.PrimaryKeyConstraint("id", name="comments_pkey"),
    )
    op.create_index(
        "comments_post_top_idx", "comments", ["post_id", "created_at", "id"],
        postgresql_where=sa.text("parent_id IS NULL AND deleted_at IS NULL"),
    )
    op.create_index(
        "comments_parent_idx", "comments", ["parent_id", "created_at", "id"],
        postgresql_where=sa.text("parent_id IS NOT NULL AND deleted_at IS NULL"),
    )

    op.create_table(
        "hashtags",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="hashtags_pkey"),
    )
    op.create_index("hashtags_name_key", "hashtags", ["name"], unique=True)

    op.create_table(
        "post_hashtags",
        sa.Column("hashtag_id", sa.Uuid(), nullable=False),
        sa.Column("post_id", sa.Uuid(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["hashtag_id"], ["hashtags.id"], name="post_hashtags_hashtag_id_fkey"),
        sa.ForeignKeyConstraint(["post_id"], ["posts.id"], name="post_hashtags_post_id_fkey"),
        sa.PrimaryKeyConstraint("hashtag_id", "post_id", name="post_hashtags_pkey"),
    )
    op.create_index(
        "post_hashtags_recent_idx", "post_hashtags",
        ["hashtag_id", sa.text("created_at DESC"), sa.text("post_id DESC")],
    )
    op.create_index("post_hashtags_post_id_idx", "post_hashtags", ["post_id"])


def downgrade() -> None:
    for table in ("post_hashtags", "hashtags", "comments", "likes"):
        op.drop_table(table)
    op.drop_column("users", "is_private")
