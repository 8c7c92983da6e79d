"""Reads of notifications: the viewer's pages, batch reads by id, the unread count."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.counters import read_counts
from domain.keyset import Position, walk

#: The sharded counter (domain.counters) of a user's unread notifications.
UNREAD_KIND = "unread_notifications"


COLUMNS = "id, recipient_id, kind, actor_id, post_id, comment_id, count, created_at, read_at"


@dataclass(frozen=True, slots=True)
class NotificationRecord:
    """A notification as the rest of Roost sees it; ``kind`` is one of models.KINDS."""

    id: uuid.UUID
    recipient_id: uuid.UUID
    kind: str
    actor_id: uuid.UUID | None
    post_id: uuid.UUID | None
    comment_id: uuid.UUID | None
    count: int
    created_at: dt.datetime
    read_at: dt.datetime | None

    @property
    def position(self) -> Position:
        """The keyset position (created_at, id) the viewer's list orders by."""
        return (self.created_at, self.id)


def to_notification(row: Any) -> NotificationRecord:
    """Map a row selected with :data:`COLUMNS` to a :class:`NotificationRecord`."""
    return NotificationRecord(*row)


async def notifications_page(
    conn: AsyncConnection,
    recipient_id: uuid.UUID,
    *,
    first: int,
    after: Position | None = None,
    backward: bool = False,
) -> tuple[list[NotificationRecord], bool]:
    """Up to ``first`` notifications, newest first, and whether more follow (keyset (created_at,
    id)); ``count`` 0 likes left out. ``backward``: the ``first`` before ``after``."""
    condition, order = walk("created_at, id", newest_first=True, backward=backward)
    where = f"AND {condition}" if after else ""
    params: dict[str, Any] = {"r": recipient_id, "limit": first + 1}
    if after:
        params["ts"], params["id"] = after
    rows = (
        await conn.execute(
            text(
                f"SELECT {COLUMNS} FROM notifications WHERE recipient_id = :r AND count > 0"
                f" {where} ORDER BY {order} LIMIT :limit"
            ),
            params,
        )
    ).all()
    page = rows[:first][::-1] if backward else rows[:first]
    return [to_notification(r) for r in page], len(rows) > first


async def notifications_by_ids(
    conn: AsyncConnection, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, NotificationRecord]:
    """Return ``{id: NotificationRecord}`` for the ids that exist, in one statement."""
    if not ids:
        return {}
    rows = await conn.execute(
        text(f"SELECT {COLUMNS} FROM notifications WHERE id = ANY(CAST(:ids AS uuid[]))"),
        {"ids": list(set(ids))},
    )
    return {r[0]: to_notification(r) for r in rows}


async def unread_notification_count(conn: AsyncConnection, recipient_id: uuid.UUID) -> int:
    """The exact unread count: a sum of at most K counter shards."""
    counts = await read_counts(conn, [recipient_id], [UNREAD_KIND])
    return counts[(recipient_id, UNREAD_KIND)]


@dataclass(frozen=True)
class UnreadDrift:
    """A user whose unread counter differs from ``count(*)`` of their unread rows."""

    user_id: uuid.UUID
    actual: int
    stored: int


async def verify_unread_counts(engine: AsyncEngine) -> list[UnreadDrift]:
    """Unread counters differing from ``count(*)`` of shown unread rows, one REPEATABLE READ
    snapshot."""
    async with engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="REPEATABLE READ")
        rows = (
            await conn.execute(
                text(
                    """
                    WITH actual AS (
                        SELECT recipient_id AS user_id, count(*) AS n FROM notifications
                        WHERE read_at IS NULL AND count > 0 GROUP BY recipient_id
                    ), stored AS (
                        SELECT entity_id AS user_id, sum(value) AS n FROM counter_shards
                        WHERE kind = :kind GROUP BY entity_id
                    )
                    SELECT coalesce(a.user_id, s.user_id), coalesce(a.n, 0), coalesce(s.n, 0)
                    FROM actual a FULL JOIN stored s ON a.user_id = s.user_id
                    WHERE coalesce(a.n, 0) <> coalesce(s.n, 0)
                    """
                ),
                {"kind": UNREAD_KIND},
            )
        ).all()
    return [UnreadDrift(r[0], int(r[1]), int(r[2])) for r in rows]
