"""Use case: mark notifications read."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import Delta, add_deltas
from domain.notifications.queries import UNREAD_KIND, unread_notification_count


async def mark_notifications_read(
    engine: AsyncEngine,
    recipient_id: uuid.UUID,
    ids: Sequence[uuid.UUID] | None = None,
    *,
    counter_shards: int,
) -> int:
    """Mark ``ids`` (None or empty: all) read with the unread counter, in one transaction; return
    the unread count after. Foreign or unknown ids are ignored."""
    where = "AND id = ANY(CAST(:ids AS uuid[]))" if ids else ""
    params: dict[str, object] = {"r": recipient_id}
    if ids:
        params["ids"] = list(set(ids))
    async with engine.begin() as conn:
        result = await conn.execute(
            text(
                "UPDATE notifications SET read_at = now()"
                f" WHERE recipient_id = :r AND read_at IS NULL AND count > 0 {where}"
            ),
            params,
        )
        changed = result.rowcount or 0
        if changed:
            await add_deltas(
                conn, [Delta(recipient_id, UNREAD_KIND, -changed)], shards=counter_shards
            )
        return await unread_notification_count(conn, recipient_id)
