"""Use case: unfollow a user (docs/seeds/followers-following.md "Writes": soft delete)."""

from __future__ import annotations

import json
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import Delta, shard_rows, upsert_rows_sql
from domain.db import new_id
from domain.social.cancel_follow_request import cancel_ctes, cancel_params
from domain.social.errors import SelfFollowError

# End the live follow, and only if one ended: its outbox event and both counters (-1),
# all in one statement; the same statement withdraws a pending follow request. The follow
# ends only while both accounts are active, read under FOR KEY SHARE: the counters count
# follows between active accounts only, and a concurrent ban either waits for this
# unfollow or is seen by it (README "Counters").
_UNFOLLOW = text(
    f"""
    WITH active AS (
        SELECT count(*) AS n FROM (
            SELECT 1 FROM users WHERE id IN (:follower, :followee) AND status = 'active'
            ORDER BY id FOR KEY SHARE
        ) u
    ), f AS (
        UPDATE follows SET deleted_at = now()
        WHERE follower_id = :follower AND followee_id = :followee AND deleted_at IS NULL
          AND (SELECT n FROM active) = 2
        RETURNING id
    ), event AS (
        INSERT INTO outbox (id, topic, aggregate_id, payload)
        SELECT :event_id, 'follow.removed', f.id, CAST(:payload AS jsonb) FROM f
    ), counted AS (
        {upsert_rows_sql("EXISTS (SELECT 1 FROM f)")}
    ), {cancel_ctes()}
    SELECT (SELECT id FROM f) AS follow_id, (SELECT id FROM cancelled) AS request_id
    """
)


async def unfollow_user(
    engine: AsyncEngine, follower_id: uuid.UUID, followee_id: uuid.UUID, *, counter_shards: int
) -> bool:
    """Soft-delete the live follow of the pair, or withdraw a pending follow request to a
    private account (``follow_request.cancelled``); return True if either happened now.

    Idempotent and safe under concurrency: of several unfollows of the same pair at
    once, the row lock lets exactly one match ``deleted_at IS NULL``, so the counters
    drop once and never below the number of live rows. A follow to or from a banned or
    deleted account is left as it is (its counters already leave it out; it counts
    again if the account is reinstated). Raises SelfFollowError for one's own id; an
    unknown user is simply not followed (returns False).
    """
    if follower_id == followee_id:
        raise SelfFollowError()
    async with engine.begin() as conn:
        row = (
            await conn.execute(
                _UNFOLLOW,
                {
                    **cancel_params(follower_id, followee_id),
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
        ).one()
    return row.follow_id is not None or row.request_id is not None
