"""Check the follow counters against ``count(*)`` of live follows (design.md "Data")."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine


@dataclass(frozen=True)
class Drift:
    """One counter whose stored sum differs from the rows it counts."""

    entity_id: uuid.UUID
    kind: str
    actual: int
    stored: int


@dataclass(frozen=True)
class VerifyReport:
    """``checked`` counters compared; ``drift`` lists every mismatch (empty = exact)."""

    checked: int
    drift: list[Drift]


_VERIFY = text(
    """
    WITH actual AS (
        SELECT followee_id AS entity_id, 'followers' AS kind, count(*) AS n
        FROM follows WHERE deleted_at IS NULL GROUP BY followee_id
        UNION ALL
        SELECT follower_id, 'following', count(*)
        FROM follows WHERE deleted_at IS NULL GROUP BY follower_id
    ), stored AS (
        SELECT entity_id, kind, sum(value) AS n FROM counter_shards
        WHERE kind IN ('followers', 'following') GROUP BY entity_id, kind
    )
    SELECT coalesce(a.entity_id, s.entity_id) AS entity_id,
           coalesce(a.kind, s.kind) AS kind,
           coalesce(a.n, 0) AS actual, coalesce(s.n, 0) AS stored
    FROM actual a FULL JOIN stored s ON a.entity_id = s.entity_id AND a.kind = s.kind
    """
)


async def verify_follow_counts(engine: AsyncEngine) -> VerifyReport:
    """Compare every followers/following counter with ``count(*)`` in one consistent
    snapshot (REPEATABLE READ), so concurrent writes cannot show up as drift."""
    async with engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="REPEATABLE READ")
        rows = (await conn.execute(_VERIFY)).all()
    drift = [
        Drift(r.entity_id, r.kind, int(r.actual), int(r.stored))
        for r in rows
        if r.actual != r.stored
    ]
    return VerifyReport(checked=len(rows), drift=drift)
