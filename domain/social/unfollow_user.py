"""Use case: unfollow a user (seeds/followers-following.md "Writes": soft delete)."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import Delta, add_deltas
from domain.outbox.append import append_event
from domain.social.errors import SelfFollowError

_UNFOLLOW = text(
    """
    UPDATE follows SET deleted_at = now()
    WHERE follower_id = :follower AND followee_id = :followee AND deleted_at IS NULL
    RETURNING id
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
        follow_id = await conn.scalar(_UNFOLLOW, {"follower": follower_id, "followee": followee_id})
        if follow_id is None:
            return False
        await append_event(
            conn,
            "follow.removed",
            follow_id,
            {"follower_id": str(follower_id), "followee_id": str(followee_id)},
        )
        await add_deltas(
            conn,
            [Delta(followee_id, "followers", -1), Delta(follower_id, "following", -1)],
            shards=counter_shards,
        )
    return True
