"""Use case: unfollow a user (seeds/followers-following.md "Writes": soft delete)."""

from __future__ import annotations

import json
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import Delta, shard_rows, upsert_rows_sql
from domain.db import new_id
from domain.social.errors import SelfFollowError

# End the live follow, and only if one ended: its outbox event and both counters (-1),
# all in one statement.
_UNFOLLOW = text(
    f"""
    WITH f AS (
        UPDATE follows SET deleted_at = now()
        WHERE follower_id = :follower AND followee_id = :followee AND deleted_at IS NULL
        RETURNING id
    ), event AS (
        INSERT INTO outbox (id, topic, aggregate_id, payload)
        SELECT :event_id, 'follow.removed', f.id, CAST(:payload AS jsonb) FROM f
    ), counted AS (
        {upsert_rows_sql("EXISTS (SELECT 1 FROM f)")}
    )
    SELECT id FROM f
    """
)


async def unfollow_user(
    engine: AsyncEngine, follower_id: uuid.UUID, followee_id: uuid.UUID, *, counter_shards: int
) -> bool:
    """Soft-delete the live follow of the pair; return True if one was ended now.

    Idempotent and safe under concurrency: of several unfollows of the same pair at
    once, the row lock lets exactly one match ``deleted_at IS NULL``, so the counters
    drop once and never below the number of live rows. Raises SelfFollowError for
    one's own id; an unknown user is simply not followed (returns False).
    """
    if follower_id == followee_id:
        raise SelfFollowError()
    async with engine.begin() as conn:
        follow_id = await conn.scalar(
            _UNFOLLOW,
            {
                "follower": follower_id,
                "followee": followee_id,
                "event_id": new_id(),
                "payload": json.dumps(
                    {"follower_id": str(follower_id), "followee_id": str(followee_id)}
                ),
                **shard_rows(
                    [Delta(followee_id, "followers", -1), Delta(follower_id, "following", -1)],
                    shards=counter_shards,
                ),
            },
        )
    return follow_id is not None
