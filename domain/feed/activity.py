"""Recording that a user is active, cheaply (fan-out pushes only to active followers)."""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.feed.config import FeedConfig, FeedStores

#: At most one PostgreSQL write per user per this period.
ACTIVITY_GRANULARITY = dt.timedelta(hours=1)


def activity_key(user_id: uuid.UUID) -> str:
    """``active:{<user id>}``, set NX for ACTIVITY_GRANULARITY per period."""
    return f"active:{{{user_id}}}"


async def note_active(
    engine: AsyncEngine, stores: FeedStores, config: FeedConfig, user_id: uuid.UUID
) -> None:
    """On a newly set marker: update ``users.last_active_at``; drop the feed of a user idle over
    ``active_window``."""
    async with engine.begin() as conn:
        previous = (
            await conn.execute(
                text(
                    "UPDATE users u SET last_active_at = now()"
                    " FROM (SELECT id, last_active_at FROM users WHERE id = :id FOR UPDATE) old"
                    " WHERE u.id = old.id RETURNING old.last_active_at"
                ),
                {"id": user_id},
            )
        ).first()
    if previous is not None:
        last = previous[0]
        if last is None or last < dt.datetime.now(dt.UTC) - config.active_window:
            await stores.feeds.drop(user_id)
