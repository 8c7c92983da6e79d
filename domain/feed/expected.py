"""The posts a home feed must hold, computed in SQL from the follow graph (for audits)."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from domain.visibility.predicates import is_active, is_live

#: Own and followees' live posts by active authors, minus blocks and mutes (README "Who sees what").
_EXPECTED_FEED_SQL = text(
    f"""
    SELECT p.id FROM posts p JOIN users a ON a.id = p.author_id
    WHERE {is_live("p")} AND {is_active("a")}
      AND (p.author_id = :u OR EXISTS (
            SELECT 1 FROM follows f WHERE f.follower_id = :u AND f.followee_id = p.author_id
              AND {is_live("f")}))
      AND NOT EXISTS (SELECT 1 FROM blocks b
              WHERE (b.blocker_id = :u AND b.blocked_id = p.author_id)
                 OR (b.blocker_id = p.author_id AND b.blocked_id = :u))
      AND NOT EXISTS (SELECT 1 FROM mutes m WHERE m.muter_id = :u AND m.muted_id = p.author_id)
    """
)


async def expected_feed(conn: AsyncConnection, user_id: uuid.UUID) -> set[uuid.UUID]:
    """The ids of every post ``user_id``'s home feed must hold, each once (no order)."""
    return {row[0] for row in await conn.execute(_EXPECTED_FEED_SQL, {"u": user_id})}
