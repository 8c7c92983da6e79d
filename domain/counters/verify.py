"""Check every sharded counter against ``count(*)`` of the rows it counts
(design.md "Data": "A verify command compares them with count(*) and must find zero
drift")."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.progress import Progress, no_progress

#: kind -> the query of its true values, ``SELECT entity_id, count(*) … GROUP BY 1``.
ACTUAL: dict[str, str] = {
    "followers": "SELECT followee_id, count(*) FROM follows WHERE deleted_at IS NULL GROUP BY 1",
    "following": "SELECT follower_id, count(*) FROM follows WHERE deleted_at IS NULL GROUP BY 1",
    "posts": "SELECT author_id, count(*) FROM posts WHERE deleted_at IS NULL GROUP BY 1",
    "likes": "SELECT post_id, count(*) FROM likes GROUP BY 1",
    "comments": "SELECT post_id, count(*) FROM comments WHERE deleted_at IS NULL GROUP BY 1",
    "unread_notifications": (
        "SELECT recipient_id, count(*) FROM notifications WHERE read_at IS NULL GROUP BY 1"
    ),
}


@dataclass(frozen=True)
class Drift:
    """One counter whose stored sum differs from the rows it counts."""

    entity_id: uuid.UUID
    kind: str
    actual: int
    stored: int


@dataclass(frozen=True)
class VerifyReport:
    """``checked`` counters compared (per kind in ``by_kind``); ``drift`` lists every
    mismatch (empty = exact)."""

    checked: int
    drift: list[Drift]
    by_kind: dict[str, int]


async def verify_counts(
    engine: AsyncEngine, kinds: Sequence[str] | None = None, progress: Progress = no_progress
) -> VerifyReport:
    """Compare the counters of ``kinds`` (default: all of :data:`ACTUAL`) with
    ``count(*)``, all in one REPEATABLE READ snapshot so that concurrent writes cannot
    show up as drift; ``progress`` hears each kind done (step "check counters", unit
    "kinds"). Raises KeyError for an unknown kind."""
    kinds = list(kinds or ACTUAL)
    drift: list[Drift] = []
    by_kind: dict[str, int] = {}
    async with engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="REPEATABLE READ")
        async with conn.begin():
            for i, kind in enumerate(kinds):
                progress("check counters", i, len(kinds), "kinds")
                rows = (
                    await conn.execute(
                        text(
                            f"""
                            WITH actual(entity_id, n) AS ({ACTUAL[kind]}),
                            stored AS (
                                SELECT entity_id, sum(value) AS n FROM counter_shards
                                WHERE kind = :kind GROUP BY entity_id
                            )
                            SELECT coalesce(a.entity_id, s.entity_id),
                                   coalesce(a.n, 0), coalesce(s.n, 0)
                            FROM actual a FULL JOIN stored s ON a.entity_id = s.entity_id
                            """
                        ),
                        {"kind": kind},
                    )
                ).all()
                by_kind[kind] = len(rows)
                drift += [Drift(r[0], kind, int(r[1]), int(r[2])) for r in rows if r[1] != r[2]]
    progress("check counters", len(kinds), len(kinds), "kinds")
    return VerifyReport(checked=sum(by_kind.values()), drift=drift, by_kind=by_kind)
