"""The lock keeping counters exact across status changes (docs/architecture/counters.md "Counters"):
counted writes take ``FOR KEY SHARE``, ``set_user_status`` ``FOR UPDATE``."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

_STATUSES = text(
    "SELECT id, status FROM users WHERE id = ANY(CAST(:ids AS uuid[])) ORDER BY id FOR KEY SHARE"
)


async def lock_statuses(conn: AsyncConnection, ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, str]:
    """``{id: status}`` of ``ids`` under ``FOR KEY SHARE`` (id order) until the transaction ends."""
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    return {r.id: r.status for r in await conn.execute(_STATUSES, {"ids": wanted})}


async def lock_active(conn: AsyncConnection, ids: Iterable[uuid.UUID]) -> set[uuid.UUID]:
    """The accounts among ``ids`` that are active, as :func:`lock_statuses` reads them."""
    return {i for i, s in (await lock_statuses(conn, ids)).items() if s == "active"}
