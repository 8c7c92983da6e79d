"""Notifications gain ``follow_request_approved``: the requester's notice that a private
account approved their follow request.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02
"""
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_OLD_KINDS = (
    "follow", "follow_digest", "follow_request", "like", "comment", "reply", "mention",
    "post_published", "post_failed",
)
_NEW_KINDS = (*_OLD_KINDS, "follow_request_approved")


def _kinds(kinds: tuple[str, ...]) -> str:
    return "kind IN (" + ", ".join(f"'{k}'" for k in kinds) + ")"


def upgrade() -> None:
    op.drop_constraint("notifications_kind_known_check", "notifications", type_="check")
    op.create_check_constraint("notifications_kind_known_check", "notifications", _kinds(_NEW_KINDS))


def downgrade() -> None:
    op.execute("DELETE FROM notifications WHERE kind = 'follow_request_approved'")
    op.drop_constraint("notifications_kind_known_check", "notifications", type_="check")
    op.create_check_constraint("notifications_kind_known_check", "notifications", _kinds(_OLD_KINDS))
