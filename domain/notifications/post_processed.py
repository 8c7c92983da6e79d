"""Telling an author that the media worker finished their post (docs/api/media.md "Media")."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.notifications.config import NotificationConfig
from domain.notifications.store import Changes, Draft, EventRef, insert_notifications
from domain.visibility.predicates import is_active, is_live

#: ``post.processed`` state -> the author's notification kind.
KIND_OF_STATE = {"published": "post_published", "failed": "post_failed"}


async def notify_post_processed(
    engine: AsyncEngine,
    config: NotificationConfig,
    event: EventRef,
    post_id: uuid.UUID,
    author_id: uuid.UUID,
    state: str,
) -> Changes:
    """Handle ``post.processed``: POST_PUBLISHED or POST_FAILED for the active author,
    idempotent."""
    kind = KIND_OF_STATE.get(state)
    if kind is None:
        return Changes()
    async with engine.begin() as conn:
        ok = await conn.scalar(
            text(
                "SELECT EXISTS (SELECT 1 FROM posts p JOIN users u ON u.id = p.author_id"
                f" WHERE p.id = :p AND p.author_id = :a AND {is_live('p')}"
                f" AND {is_active('u')})"
            ),
            {"p": post_id, "a": author_id},
        )
        if not ok:
            return Changes()
        created = await insert_notifications(
            conn,
            event,
            [Draft(author_id, kind, post_id=post_id)],
            counter_shards=config.counter_shards,
        )
    return Changes(created=created)
