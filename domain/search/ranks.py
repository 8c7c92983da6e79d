"""Refreshing the ranking signal of people search (``user_search.followers``)."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

#: Users per statement (one short transaction each).
BATCH = 5_000

_REFRESH = text(
    """
    WITH batch AS (
        SELECT user_id FROM user_search
        WHERE user_id > :after ORDER BY user_id LIMIT :batch
    ), totals AS (
        SELECT b.user_id, COALESCE(sum(c.value), 0) AS followers
        FROM batch b
        LEFT JOIN counter_shards c ON c.entity_id = b.user_id AND c.kind = 'followers'
        GROUP BY b.user_id
    ), changed AS (
        UPDATE user_search s SET followers = t.followers
        FROM totals t
        WHERE s.user_id = t.user_id AND s.followers <> t.followers
        RETURNING 1
    )
    SELECT (SELECT user_id FROM batch ORDER BY user_id DESC LIMIT 1) AS last,
           (SELECT count(*) FROM changed) AS n
    """
)


async def refresh_search_ranks(engine: AsyncEngine, *, batch: int = BATCH) -> int:
    """Copy active users' follower counts into ``user_search.followers``, ``batch`` per transaction;
    return rows changed."""
    after = uuid.UUID(int=0)
    changed = 0
    while True:
        async with engine.begin() as conn:
            row = (await conn.execute(_REFRESH, {"after": after, "batch": batch})).one()
        changed += int(row.n)
        if row.last is None:
            return changed
        after = row.last
