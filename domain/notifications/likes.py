"""Use case: notify a post's author of a like, coalescing likes within 10 minutes.

The first like of a post (for its author) creates a LIKE notification; each further like
whose event falls within ``like_window`` (10 minutes) of that notification's time is
coalesced into it instead of creating another: ``count`` + 1, the actor becomes the
newest liker ("bob and 2 others liked your post") and it is unread again. A like after
the window opens a new notification. Only a new notification is pushed (one push per
post per 10 minutes at most); coalescing is published for real time.
"""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import Delta, add_deltas
from domain.db import new_id
from domain.locks import advisory_xact_lock
from domain.notifications.config import NotificationConfig
from domain.notifications.queries import COLUMNS, UNREAD_KIND, to_notification
from domain.notifications.store import (
    Changes,
    Draft,
    EventRef,
    eligible_recipients,
    insert_notifications,
    record_source,
    source_recorded,
)

_OPEN_GROUP = text(
    """
    SELECT id, read_at FROM notifications
    WHERE post_id = :post AND kind = 'like' AND recipient_id = :r
      AND created_at > CAST(:at AS timestamptz) - make_interval(secs => :window)
      AND created_at <= CAST(:at AS timestamptz) + make_interval(secs => :window)
    ORDER BY created_at DESC LIMIT 1
    FOR UPDATE
    """
)

_COALESCE = text(
    f"""
    UPDATE notifications SET count = count + 1, actor_id = :actor, read_at = NULL
    WHERE id = :id RETURNING {COLUMNS}
    """
)


async def notify_like(
    engine: AsyncEngine,
    config: NotificationConfig,
    event: EventRef,
    post_id: uuid.UUID,
    liker_id: uuid.UUID,
) -> Changes:
    """Handle ``like.created`` {post_id, user_id, author_id}: create or coalesce the
    author's LIKE notification (see the module docstring).

    One transaction, re-reading state: nothing if the like is gone (unliked before the
    job ran) or the post deleted, for a like of one's own post, across a block, or for
    an event handled already (``notification_sources`` records every like event, so a
    job that runs twice coalesces nothing twice). A transaction-scoped advisory lock on
    (author, post) makes concurrent likes of one post join one notification.
    """
    async with engine.begin() as conn:
        author_id = await conn.scalar(
            text(
                "SELECT p.author_id FROM posts p JOIN likes l ON l.post_id = p.id"
                " WHERE p.id = :post AND l.user_id = :liker AND p.deleted_at IS NULL"
            ),
            {"post": post_id, "liker": liker_id},
        )
        if author_id is None or not await eligible_recipients(
            conn, liker_id, [author_id], post_id=post_id
        ):
            return Changes()
        if await source_recorded(conn, event, author_id, "like"):
            return Changes()
        await advisory_xact_lock(conn, "notify-like", author_id, post_id)
        group = (
            await conn.execute(
                _OPEN_GROUP,
                {
                    "post": post_id,
                    "r": author_id,
                    "at": event.at,
                    "window": config.like_window.total_seconds(),
                },
            )
        ).first()
        notification_id = group.id if group else new_id()
        if not await record_source(
            conn,
            event,
            author_id,
            "like",
            actor_id=liker_id,
            outcome="merged" if group else "notified",
            notification_id=notification_id,
        ):
            return Changes()
        if group is None:
            created = await insert_notifications(
                conn,
                event,
                [Draft(author_id, "like", actor_id=liker_id, post_id=post_id)],
                counter_shards=config.counter_shards,
                ids=[notification_id],
            )
            return Changes(created=created)
        row = (await conn.execute(_COALESCE, {"id": group.id, "actor": liker_id})).one()
        if group.read_at is not None:  # unread again
            await add_deltas(conn, [Delta(author_id, UNREAD_KIND, 1)], shards=config.counter_shards)
    return Changes(updated=[to_notification(row)])
