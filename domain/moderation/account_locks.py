"""The lock that keeps counters exact while accounts change status
(docs/architecture/counters.md "Counters"): a counted write reads its accounts under
``FOR KEY SHARE`` and ``set_user_status`` takes ``FOR UPDATE``, so a write in flight is
seen by the status change and a later one sees the new status.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

_STATUSES = text(
    "SELECT id, status FROM users WHERE id = ANY(CAST(:ids AS uuid[])) ORDER BY id FOR KEY SHARE"
)


async def lock_statuses(conn: AsyncConnection, ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, str]:
    """``{id: status}`` of the accounts among ``ids``, held under ``FOR KEY SHARE`` (in
    id order) until the caller's transaction ends."""
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    return {r.id: r.status for r in await conn.execute(_STATUSES, {"ids": wanted})}


async def lock_active(conn: AsyncConnection, ids: Iterable[uuid.UUID]) -> set[uuid.UUID]:
    """The accounts among ``ids`` that are active, as :func:`lock_statuses` reads them."""
    return {i for i, s in (await lock_statuses(conn, ids)).items() if s == "active"}
