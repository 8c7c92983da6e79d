"""One visibility rule: the people behind a like notification, and the indexes that a
ban, a block and the per-viewer counts read through.

Revision ID: 0008
Revises: 0009
Create Date: 2026-12-06
"""
import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "notification_actors",
        sa.Column("notification_id", sa.Uuid(), nullable=False),
        sa.Column("actor_id", sa.Uuid(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("withdrawn_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["notification_id"], ["notifications.id"], ondelete="CASCADE",
            name="notification_actors_notification_id_fkey",
        ),
        sa.ForeignKeyConstraint(
            ["actor_id"], ["users.id"], name="notification_actors_actor_id_fkey"
        ),
        sa.PrimaryKeyConstraint("notification_id", "actor_id", name="notification_actors_pkey"),
    )
    op.create_index("notification_actors_actor_id_idx", "notification_actors", ["actor_id"])
    op.create_index(
        "notifications_actor_id_idx", "notifications", ["actor_id"],
        postgresql_where=sa.text("actor_id IS NOT NULL"),
    )
    op.create_index("likes_user_id_idx", "likes", ["user_id"])
    op.create_index(
        "comments_author_post_idx", "comments", ["author_id", "post_id"],
        postgresql_where=sa.text("deleted_at IS NULL"),
    )
    op.drop_constraint("notifications_count_positive_check", "notifications", type_="check")
    op.create_check_constraint(
        "notifications_count_not_negative_check", "notifications", "count >= 0"
    )
    # Like notifications written before: their likers, from the per-event records (kept
    # 7 days) and the latest liker; count becomes the number of distinct people.
    op.execute(
        """
        INSERT INTO notification_actors (notification_id, actor_id, created_at)
        SELECT s.notification_id, s.actor_id, min(s.created_at)
        FROM notification_sources s JOIN notifications n ON n.id = s.notification_id
        WHERE s.kind = 'like' AND s.outcome IN ('notified', 'merged') AND s.actor_id IS NOT NULL
        GROUP BY s.notification_id, s.actor_id
        ON CONFLICT DO NOTHING
        """
    )
    op.execute(
        """
        INSERT INTO notification_actors (notification_id, actor_id, created_at)
        SELECT id, actor_id, created_at FROM notifications
        WHERE kind = 'like' AND actor_id IS NOT NULL
        ON CONFLICT DO NOTHING
        """
    )
    op.execute(
        """
        UPDATE notifications n SET count = m.k
        FROM (SELECT notification_id, count(*) AS k FROM notification_actors
              GROUP BY notification_id) m
        WHERE n.id = m.notification_id AND n.count <> m.k
        """
    )


def downgrade() -> None:
    op.drop_constraint("notifications_count_not_negative_check", "notifications", type_="check")
    op.execute("UPDATE notifications SET count = 1 WHERE count < 1")
    op.create_check_constraint(
        "notifications_count_positive_check", "notifications", "count >= 1"
    )
    op.drop_index("comments_author_post_idx", table_name="comments")
    op.drop_index("likes_user_id_idx", table_name="likes")
    op.drop_index("notifications_actor_id_idx", table_name="notifications")
    op.drop_index("notification_actors_actor_id_idx", table_name="notification_actors")
    op.drop_table("notification_actors")
