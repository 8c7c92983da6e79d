"""The people behind a like notification: ``count`` (not withdrawn; 0 shows to nobody), ``actor``
(the latest), recounted by :func:`refresh_like_groups`."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from domain.counters import Delta
from domain.db import AnyRow
from domain.notifications.queries import COLUMNS, UNREAD_KIND, NotificationRecord, to_notification

# Lock in id order (every multi-group writer does) and read what they showed before.
_LOCK = text(
    "SELECT id, count, read_at FROM notifications"
    " WHERE id = ANY(CAST(:ids AS uuid[])) ORDER BY id FOR UPDATE"
)

_RECOUNT = text(
    f"""
    UPDATE notifications n
    SET count = m.k, actor_id = coalesce(m.latest, n.actor_id),
        read_at = CASE WHEN n.id = ANY(CAST(:again AS uuid[])) THEN NULL ELSE n.read_at END
    FROM (
        SELECT g.id,
               count(a.actor_id) FILTER (WHERE a.withdrawn_at IS NULL) AS k,
               (array_agg(a.actor_id ORDER BY a.created_at DESC, a.actor_id DESC)
                    FILTER (WHERE a.withdrawn_at IS NULL))[1] AS latest
        FROM unnest(CAST(:ids AS uuid[])) AS g(id)
        LEFT JOIN notification_actors a ON a.notification_id = g.id
        GROUP BY g.id
    ) m
    WHERE n.id = m.id
    RETURNING {", ".join("n." + c.strip() for c in COLUMNS.split(","))}
    """
)


def shows_unread(count: int, read_at: object) -> bool:
    """Whether it counts as unread: someone behind it and not read."""
    return count > 0 and read_at is None


def row_shows_unread(row: AnyRow) -> bool:
    """:func:`shows_unread` of a row (by column name)."""
    return shows_unread(row._mapping["count"], row._mapping["read_at"])


async def refresh_like_groups(
    conn: AsyncConnection, ids: Collection[uuid.UUID], *, unread_again: Sequence[uuid.UUID] = ()
) -> tuple[list[NotificationRecord], list[Delta]]:
    """Recount like notifications ``ids`` (locked in id order), making ``unread_again`` unread;
    return the rows and unread deltas."""
    if not ids:
        return [], []
    ordered = sorted(set(ids), key=lambda i: i.bytes)
    before = {r.id: row_shows_unread(r) for r in await conn.execute(_LOCK, {"ids": ordered})}
    rows = await conn.execute(_RECOUNT, {"ids": ordered, "again": list(unread_again)})
    records = [to_notification(r) for r in rows]
    deltas = [
        Delta(n.recipient_id, UNREAD_KIND, shows_unread(n.count, n.read_at) - before[n.id])
        for n in records
        if shows_unread(n.count, n.read_at) != before[n.id]
    ]
    return records, deltas
