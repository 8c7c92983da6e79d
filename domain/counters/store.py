"""Writes, reads and compaction of sharded counters."""

from __future__ import annotations

import random
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine


class Delta(NamedTuple):
    """One change to a counter: add ``amount`` (may be negative) to (``entity_id``, ``kind``)."""

    entity_id: uuid.UUID
    kind: str
    amount: int


def shard_rows(
    deltas: Iterable[Delta], *, shards: int, rng: random.Random | None = None
) -> dict[str, list[Any]]:
    """Merge ``deltas`` per counter onto random shards; return column arrays in (entity_id, kind)
    order, the lock order, for :func:`upsert_rows_sql`."""
    merged: dict[tuple[uuid.UUID, str], int] = defaultdict(int)
    for d in deltas:
        merged[(d.entity_id, d.kind)] += d.amount
    rows = sorted((k, v) for k, v in merged.items() if v)
    pick = (rng or random).randrange
    return {
        "entity_ids": [k[0] for k, _ in rows],
        "kinds": [k[1] for k, _ in rows],
        "shards": [pick(shards) for _ in rows],
        "amounts": [v for _, v in rows],
    }


def upsert_rows_sql(condition: str = "") -> str:
    """The shard upsert of :func:`shard_rows` params, optionally ``WHERE <condition>``, also usable
    as a CTE."""
    where = f"WHERE {condition}" if condition else ""
    return f"""
        INSERT INTO counter_shards (entity_id, kind, shard, value)
        SELECT * FROM unnest(CAST(:entity_ids AS uuid[]), CAST(:kinds AS text[]),
                             CAST(:shards AS smallint[]), CAST(:amounts AS bigint[])) {where}
        ON CONFLICT (entity_id, kind, shard)
        DO UPDATE SET value = counter_shards.value + EXCLUDED.value
    """


_UPSERT = text(upsert_rows_sql())


async def add_deltas(
    conn: AsyncConnection, deltas: Iterable[Delta], *, shards: int, rng: random.Random | None = None
) -> None:
    """Add every delta to a random shard in one atomic statement in the caller's transaction,
    locking in (entity_id, kind) order as every writer and :func:`compact` do (no deadlock)."""
    params = shard_rows(deltas, shards=shards, rng=rng)
    if params["entity_ids"]:
        await conn.execute(_UPSERT, params)


async def read_counts(
    conn: AsyncConnection, entity_ids: Sequence[uuid.UUID], kinds: Sequence[str]
) -> dict[tuple[uuid.UUID, str], int]:
    """``{(entity_id, kind): count}`` (0 when absent), one statement, the caller's snapshot."""
    out = {(e, k): 0 for e in entity_ids for k in kinds}
    if not entity_ids:
        return out
    result = await conn.execute(
        text(
            """
            SELECT entity_id, kind, sum(value)::bigint
            FROM counter_shards
            WHERE entity_id = ANY(CAST(:ids AS uuid[])) AND kind = ANY(CAST(:kinds AS text[]))
            GROUP BY entity_id, kind
            """
        ),
        {"ids": list(entity_ids), "kinds": list(kinds)},
    )
    for entity_id, kind, total in result:
        out[(entity_id, kind)] = int(total)
    return out


_COMPACT_BATCH = text(
    """
    WITH targets AS (
        SELECT entity_id, kind FROM counter_shards
        WHERE shard <> 0
        GROUP BY entity_id, kind
        ORDER BY entity_id, kind
        LIMIT :batch
    ), locked AS (
        -- Lock in the writers' order (entity_id, kind, shard) so compaction never
        -- closes a lock cycle with add_deltas().
        SELECT c.entity_id, c.kind, c.shard FROM counter_shards c
        JOIN targets t USING (entity_id, kind)
        ORDER BY c.entity_id, c.kind, c.shard
        FOR UPDATE OF c
    ), moved AS (
        DELETE FROM counter_shards c USING locked l
        WHERE c.entity_id = l.entity_id AND c.kind = l.kind AND c.shard = l.shard
          AND c.shard <> 0
        RETURNING c.entity_id, c.kind, c.value
    )
    INSERT INTO counter_shards (entity_id, kind, shard, value)
    SELECT entity_id, kind, 0, sum(value) FROM moved GROUP BY entity_id, kind
    ON CONFLICT (entity_id, kind, shard)
    DO UPDATE SET value = counter_shards.value + EXCLUDED.value
    """
)


async def compact(engine: AsyncEngine, *, batch: int = 5000, max_retries: int = 5) -> int:
    """Fold shards into shard 0, ``batch`` counters per transaction (deadlocks retried
    ``max_retries``); return how many."""
    folded = 0
    while True:
        for attempt in range(max_retries + 1):
            try:
                async with engine.begin() as conn:
                    result = await conn.execute(_COMPACT_BATCH, {"batch": batch})
                    n = result.rowcount or 0
                break
            except DBAPIError as exc:  # deadlock_detected / serialization_failure
                if attempt == max_retries or getattr(exc.orig, "sqlstate", None) not in (
                    "40P01",
                    "40001",
                ):
                    raise
        folded += n
        if n < batch:
            return folded
