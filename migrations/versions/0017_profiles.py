"""Profiles: ``users.website`` (an http(s) link), ``users.avatar`` (the processed square
variants of an image upload, JSON) and ``users.avatar_upload_id`` (the upload being
processed to replace it).

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-02
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("users", sa.Column("website", sa.Text(), nullable=True))
    op.add_column("users", sa.Column("avatar", postgresql.JSONB(), nullable=True))
    op.add_column("users", sa.Column("avatar_upload_id", sa.Uuid(), nullable=True))


def downgrade() -> None:
    op.drop_column("users", "avatar_upload_id")
    op.drop_column("users", "avatar")
    op.drop_column("users", "website")
