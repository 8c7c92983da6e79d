"""Use cases: coalesce likes over ``like_window`` into one LIKE notification per post, and take a
withdrawn like out (docs/api/notifications.md "Notifications"). A per-(author, post) lock makes
the result order-independent."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.counters import add_deltas
from domain.db import new_id
from domain.locks import advisory_xact_lock
from domain.notifications.config import NotificationConfig
from domain.notifications.like_groups import refresh_like_groups
from domain.notifications.store import (
    Changes,
    Draft,
    EventRef,
    eligible_recipients,
    insert_notifications,
    record_source,
    source_recorded,
)
from domain.visibility.predicates import is_live

_OPEN_GROUP = text(
    """
    SELECT id FROM notifications
    WHERE post_id = :post AND kind = 'like' AND recipient_id = :r
      AND created_at > CAST(:at AS timestamptz) - make_interval(secs => :window)
      AND created_at <= CAST(:at AS timestamptz) + make_interval(secs => :window)
    ORDER BY created_at DESC LIMIT 1
    FOR UPDATE
    """
)

# The liker's place behind this post's like notifications for its author, newest first.
_MEMBERSHIP = text(
    """
    SELECT a.notification_id, a.withdrawn_at FROM notification_actors a
    JOIN notifications n ON n.id = a.notification_id
    WHERE a.actor_id = :liker AND n.recipient_id = :r AND n.post_id = :post AND n.kind = 'like'
    ORDER BY n.created_at DESC
    """
)

_LIKED = text("SELECT EXISTS (SELECT 1 FROM likes WHERE post_id = :post AND user_id = :liker)")

_JOIN = text(
    """
    INSERT INTO notification_actors (notification_id, actor_id, created_at)
    VALUES (:n, :liker, :at)
    ON CONFLICT (notification_id, actor_id) DO UPDATE SET withdrawn_at = NULL
    """
)

_WITHDRAW = text(
    """
    UPDATE notification_actors a SET withdrawn_at = now()
    FROM notifications n
    WHERE n.id = a.notification_id AND n.kind = 'like' AND n.recipient_id = :r
      AND n.post_id = :post AND a.actor_id = :liker AND a.withdrawn_at IS NULL
    RETURNING n.id
    """
)


async def notify_like(
    engine: AsyncEngine,
    config: NotificationConfig,
    event: EventRef,
    post_id: uuid.UUID,
    liker_id: uuid.UUID,
) -> Changes:
    """Handle ``like.created``: create the LIKE notification or join the open one, under the lock.
    Nothing for a gone or own like, a block, or a repeat."""
    async with engine.begin() as conn:
        author_id = await conn.scalar(
            text(f"SELECT author_id FROM posts WHERE id = :post AND {is_live()}"),
            {"post": post_id},
        )
        if author_id is None or not await eligible_recipients(
            conn, liker_id, [author_id], post_id=post_id
        ):
            return Changes()
        if await source_recorded(conn, event, author_id, "like"):
            return Changes()
        await advisory_xact_lock(conn, "notify-like", author_id, post_id)
        if not await conn.scalar(_LIKED, {"post": post_id, "liker": liker_id}):
            return Changes()
        return await _join(conn, config, event, author_id, post_id, liker_id)


async def _join(
    conn: AsyncConnection,
    config: NotificationConfig,
    event: EventRef,
    author_id: uuid.UUID,
    post_id: uuid.UUID,
    liker_id: uuid.UUID,
) -> Changes:
    params = {"post": post_id, "r": author_id, "liker": liker_id}
    place = (await conn.execute(_MEMBERSHIP, params)).first()
    group = (
        await conn.execute(
            _OPEN_GROUP,
            {**params, "at": event.at, "window": config.like_window.total_seconds()},
        )
    ).first()

    async def record(outcome: str, notification_id: uuid.UUID | None) -> bool:
        return await record_source(
            conn,
            event,
            author_id,
            "like",
            actor_id=liker_id,
            outcome=outcome,
            notification_id=notification_id,
        )

    if place is not None and place.withdrawn_at is None:  # already behind one: a repeat
        await record("repeat", place.notification_id)
        return Changes()
    if group is None:
        notification_id = new_id()
        if not await record("notified", notification_id):
            return Changes()
        created = await insert_notifications(
            conn,
            event,
            [Draft(author_id, "like", actor_id=liker_id, post_id=post_id)],
            counter_shards=config.counter_shards,
            ids=[notification_id],
        )
        for n in created:
            await conn.execute(_JOIN, {"n": n.id, "liker": liker_id, "at": event.at})
        return Changes(created=created)
    back = place is not None and place.notification_id == group.id  # withdrew, likes again
    if not await record("repeat" if back else "merged", group.id):
        return Changes()
    await conn.execute(_JOIN, {"n": group.id, "liker": liker_id, "at": event.at})
    records, deltas = await refresh_like_groups(
        conn, [group.id], unread_again=[] if back else [group.id]
    )
    await add_deltas(conn, deltas, shards=config.counter_shards)
    return Changes() if back else Changes(updated=records)


async def withdraw_like(
    engine: AsyncEngine,
    config: NotificationConfig,
    event: EventRef,
    post_id: uuid.UUID,
    liker_id: uuid.UUID,
) -> Changes:
    """Handle ``like.removed``: take the liker out unless they like it again; idempotent."""
    async with engine.begin() as conn:
        author_id = await conn.scalar(
            text("SELECT author_id FROM posts WHERE id = :post"), {"post": post_id}
        )
        if author_id is None:
            return Changes()
        await advisory_xact_lock(conn, "notify-like", author_id, post_id)
        if await conn.scalar(_LIKED, {"post": post_id, "liker": liker_id}):
            return Changes()
        params = {"post": post_id, "r": author_id, "liker": liker_id}
        groups = [r[0] for r in await conn.execute(_WITHDRAW, params)]
        _, deltas = await refresh_like_groups(conn, groups)
        await add_deltas(conn, deltas, shards=config.counter_shards)
    return Changes()
