"""Use case: suggest friends of friends (docs/api/suggested-follows.md "Suggested follows"), ranked
by recent followees following; at most ``followees x per_followee`` rows read."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.search.ranking import Ranked, keyset_after, keyset_params
from domain.visibility.predicates import is_live

_SQL = f"""
    WITH followees AS (
        SELECT followee_id FROM follows
        WHERE follower_id = :viewer AND {is_live()}
        ORDER BY created_at DESC, id DESC LIMIT :followees
    ), reached AS (
        SELECT fof.followee_id AS candidate
        FROM followees f CROSS JOIN LATERAL (
            SELECT x.followee_id FROM follows x
            WHERE x.follower_id = f.followee_id AND {is_live("x")}
            ORDER BY x.created_at DESC, x.id DESC LIMIT :per_followee) fof
    ), counted AS (
        SELECT candidate, count(*)::int AS n FROM reached GROUP BY candidate
    ), excluded AS (
        SELECT followee_id AS id FROM follows WHERE follower_id = :viewer AND {is_live()}
        UNION ALL SELECT target_id FROM follow_requests WHERE requester_id = :viewer
        UNION ALL SELECT blocked_id FROM blocks WHERE blocker_id = :viewer
        UNION ALL SELECT blocker_id FROM blocks WHERE blocked_id = :viewer
        UNION ALL SELECT muted_id FROM mutes WHERE muter_id = :viewer
    )
    SELECT s.user_id, c.n AS score, s.followers
    FROM counted c JOIN user_search s ON s.user_id = c.candidate
    WHERE c.candidate <> :viewer AND c.candidate NOT IN (SELECT id FROM excluded) {{after}}
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
    """Up to ``limit`` suggestions in rank order after ``after``, one statement (JIT off)."""
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
