"""Use case: suggest accounts to follow, friends of friends (docs/api/suggested-follows.md
"Suggested follows").

A candidate is followed by people the viewer follows; the more of them follow it, the
higher it ranks (then the ranking signal ``user_search.followers``, then the id). Left
out: the viewer, whom they already follow or asked to follow, whom they muted, anyone
with a block between them either way, banned and deleted accounts (no ``user_search`` row).

Bounded cost: a viewer may follow thousands (sd2494 follows 2,510 of the real graph)
and each of them thousands more, so the statement reads only the viewer's
``followees`` most recent follows and, of each of those accounts, its ``per_followee``
most recent follows, both through the ``(follower_id, created_at DESC, id DESC)``
index: at most ``followees x per_followee`` follow rows (10,000 by default), whatever
the graph. The score is therefore "how many of your recent followees follow them,
among their recent follows": recent follows say the most about present interests.
"""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.search.ranking import Ranked, keyset_after, keyset_params

_SQL = """
    WITH followees AS (
        SELECT followee_id FROM follows
        WHERE follower_id = :viewer AND deleted_at IS NULL
        ORDER BY created_at DESC, id DESC LIMIT :followees
    ), reached AS (
        SELECT fof.followee_id AS candidate
        FROM followees f CROSS JOIN LATERAL (
            SELECT x.followee_id FROM follows x
            WHERE x.follower_id = f.followee_id AND x.deleted_at IS NULL
            ORDER BY x.created_at DESC, x.id DESC LIMIT :per_followee) fof
    ), counted AS (
        SELECT candidate, count(*)::int AS n FROM reached GROUP BY candidate
    ), excluded AS (
        SELECT followee_id AS id FROM follows WHERE follower_id = :viewer AND deleted_at IS NULL
        UNION ALL SELECT target_id FROM follow_requests WHERE requester_id = :viewer
        UNION ALL SELECT blocked_id FROM blocks WHERE blocker_id = :viewer
        UNION ALL SELECT blocker_id FROM blocks WHERE blocked_id = :viewer
        UNION ALL SELECT muted_id FROM mutes WHERE muter_id = :viewer
    )
    SELECT s.user_id, c.n AS score, s.followers
    FROM counted c JOIN user_search s ON s.user_id = c.candidate
    WHERE c.candidate <> :viewer AND c.candidate NOT IN (SELECT id FROM excluded) {after}
    ORDER BY score DESC, s.followers DESC, s.user_id
    LIMIT :limit
"""


async def suggested_follows(
    engine: AsyncEngine,
    viewer_id: uuid.UUID,
    *,
    limit: int,
    after: Ranked | None = None,
    followees: int = 200,
    per_followee: int = 50,
) -> list[Ranked]:
    """Return up to ``limit`` suggestions for ``viewer_id`` in rank order (``score``:
    how many of the followees read follow them), after ``after`` when given.

    One statement, in a transaction that turns PostgreSQL's JIT off: the planner's
    estimate of the nested loops can pass ``jit_above_cost`` and compiling costs far
    more (hundreds of ms) than running it (a few ms).
    """
    if limit <= 0:
        return []
    sql = _SQL.format(after=f"AND {keyset_after('c.n', after)}" if after else "")
    params: dict[str, object] = {
        "viewer": viewer_id,
        "followees": followees,
        "per_followee": per_followee,
        "limit": limit,
    }
    if after is not None:
        params.update(keyset_params(after))
    async with engine.begin() as conn:
        await conn.execute(text("SELECT set_config('jit', 'off', true)"))
        rows = (await conn.execute(text(sql), params)).all()
    return [Ranked(r.user_id, r.score, r.followers) for r in rows]
