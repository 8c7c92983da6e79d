"""Check every sharded counter against ``count(*)`` (docs/design.md "Data")."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.progress import Progress, no_progress
from domain.visibility.predicates import is_active, is_live

#: kind -> ``SELECT entity_id, count(*) … GROUP BY 1`` (docs/architecture/counters.md "Counters").
ACTUAL: dict[str, str] = {
    "followers": (
        "SELECT f.followee_id, count(*) FROM follows f"
        f" JOIN users u ON u.id = f.follower_id AND {is_active('u')}"
        f" WHERE {is_live('f')} GROUP BY 1"
    ),
    "following": (
        "SELECT f.follower_id, count(*) FROM follows f"
        f" JOIN users u ON u.id = f.followee_id AND {is_active('u')}"
        f" WHERE {is_live('f')} GROUP BY 1"
    ),
    "posts": "SELECT author_id, count(*) FROM posts"
    f" WHERE {is_live()} AND state = 'published' GROUP BY 1",
    "likes": (
        "SELECT l.post_id, count(*) FROM likes l"
        f" JOIN users u ON u.id = l.user_id AND {is_active('u')} GROUP BY 1"
    ),
    "comments": (
        "SELECT c.post_id, count(*) FROM comments c"
        f" JOIN users ca ON ca.id = c.author_id AND {is_active('ca')}"
        " LEFT JOIN comments pc ON pc.id = c.parent_id"
        " LEFT JOIN users pa ON pa.id = pc.author_id"
        f" WHERE {is_live('c')}"
        f" AND (c.parent_id IS NULL OR ({is_live('pc')} AND {is_active('pa')}))"
        " GROUP BY 1"
    ),
    "unread_notifications": (
        "SELECT recipient_id, count(*) FROM notifications"
        " WHERE read_at IS NULL AND count > 0 GROUP BY 1"
    ),
    # Not a sharded counter: a like notification's ``count`` against its people.
    "like_notification_people": (
        "SELECT n.id, count(a.actor_id) FROM notifications n"
        " LEFT JOIN notification_actors a ON a.notification_id = n.id AND a.withdrawn_at IS NULL"
        " WHERE n.kind = 'like' GROUP BY 1"
    ),
}

#: Kinds whose stored value is not in ``counter_shards``: kind -> ``SELECT entity_id, n``.
STORED: dict[str, str] = {
    "like_notification_people": "SELECT id, count FROM notifications WHERE kind = 'like'",
}
_SHARDS = "SELECT entity_id, sum(value) FROM counter_shards WHERE kind = :kind GROUP BY entity_id"


@dataclass(frozen=True)
class Drift:
    """One counter whose stored sum differs from the rows it counts."""

    entity_id: uuid.UUID
    kind: str
    actual: int
    stored: int


@dataclass(frozen=True)
class VerifyReport:
    """``checked`` counters (``by_kind``) and every ``drift`` (empty: exact)."""

    checked: int
    drift: list[Drift]
    by_kind: dict[str, int]


async def verify_counts(
    engine: AsyncEngine, kinds: Sequence[str] | None = None, progress: Progress = no_progress
) -> VerifyReport:
    """Compare the counters of ``kinds`` (default: all of :data:`ACTUAL`) with
    ``count(*)`` in one REPEATABLE READ snapshot. Raises KeyError for an unknown kind."""
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
                            stored(entity_id, n) AS ({STORED.get(kind, _SHARDS)})
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
