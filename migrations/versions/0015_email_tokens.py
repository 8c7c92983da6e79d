"""E-mail verification and password reset (docs/api/email.md "E-mail").

``users.email_verified_at``: when the owner proved the address theirs (NULL for every
existing account). ``email_tokens``: one single-use token per mail sent, keyed by the
outbox event that asked for it, holding only the token's SHA-256.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02
"""
import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("users", sa.Column("email_verified_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "email_tokens",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column(
            "user_id",
            sa.Uuid(),
            sa.ForeignKey("users.id", ondelete="CASCADE", name="email_tokens_user_id_fkey"),
            nullable=False,
        ),
        sa.Column("purpose", sa.Text(), nullable=False),
        sa.Column("email", sa.Text(), nullable=False),
        sa.Column("token_hash", sa.LargeBinary(), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "purpose IN ('verify_email', 'reset_password')",
            name="email_tokens_purpose_known_check",
        ),
        sa.PrimaryKeyConstraint("id", name="email_tokens_pkey"),
    )
    op.create_index("email_tokens_token_hash_key", "email_tokens", ["token_hash"], unique=True)
    op.create_index(
        "email_tokens_user_id_purpose_created_at_idx",
        "email_tokens",
        ["user_id", "purpose", "created_at"],
    )


def downgrade() -> None:
    op.drop_table("email_tokens")
    op.drop_column("users", "email_verified_at")
