"""Use case: follow a user (seeds/followers-following.md "Writes")."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import Delta, shard_rows, upsert_rows_sql
from domain.db import new_id
from domain.errors import NotFoundError
from domain.social.errors import BlockedError, SelfFollowError, UserUnavailableError
from domain.social.pairs import lock_pair


@dataclass(frozen=True)
class FollowOutcome:
    """``created`` is False when the follow was already live (an idempotent retry)."""

    follow_id: uuid.UUID | None
    created: bool


_CHECK = text(
    """
    SELECT
      (SELECT status FROM users WHERE id = :follower) AS follower_status,
      (SELECT status FROM users WHERE id = :followee) AS followee_status,
      EXISTS (SELECT 1 FROM blocks
              WHERE (blocker_id = :follower AND blocked_id = :followee)
                 OR (blocker_id = :followee AND blocked_id = :follower)) AS blocked
    """
)

# The follow row, its outbox event and both counters in one statement (one round trip
# instead of three; the event and the counters are written only if a row was inserted).
_FOLLOW = text(
    f"""
    WITH f AS (
        INSERT INTO follows (id, follower_id, followee_id, source)
        VALUES (:id, :follower, :followee, :source)
        ON CONFLICT (follower_id, followee_id) WHERE deleted_at IS NULL DO NOTHING
        RETURNING id
    ), event AS (
        INSERT INTO outbox (id, topic, aggregate_id, payload)
        SELECT :event_id, 'follow.created', f.id, CAST(:payload AS jsonb) FROM f
    ), counted AS (
        {upsert_rows_sql("EXISTS (SELECT 1 FROM f)")}
    )
    SELECT id FROM f
    """
)


async def follow_user(
    engine: AsyncEngine,
    follower_id: uuid.UUID,
    followee_id: uuid.UUID,
    *,
    counter_shards: int,
    source: str = "profile",
) -> FollowOutcome:
    """Make ``follower_id`` follow ``followee_id``; idempotent.

    One transaction of three round trips (pair lock, checks, one write statement): the
    follow row (``ON CONFLICT DO NOTHING`` on the live pair), the ``follow.created``
    outbox row and both counters (+1 followers of the followee, +1 following of the
    follower) commit together, or not at all. A follow that is
    already live changes nothing and returns ``created=False``.

    Raises SelfFollowError, NotFoundError (no such user), UserUnavailableError
    (either side banned or deleted) or BlockedError (a block either way).
    """
    if follower_id == followee_id:
        raise SelfFollowError()
    async with engine.begin() as conn:
        await lock_pair(conn, follower_id, followee_id)
        check = (
            await conn.execute(_CHECK, {"follower": follower_id, "followee": followee_id})
        ).one()
        if check.followee_status is None or check.follower_status is None:
            raise NotFoundError("No user has that id.")
        if check.followee_status != "active" or check.follower_status != "active":
            raise UserUnavailableError()
        if check.blocked:
            raise BlockedError()
        follow_id = await conn.scalar(
            _FOLLOW,
            {
                "id": new_id(),
                "follower": follower_id,
                "followee": followee_id,
                "source": source,
                "event_id": new_id(),
                "payload": json.dumps(
                    {"follower_id": str(follower_id), "followee_id": str(followee_id)}
                ),
                **shard_rows(
                    [Delta(followee_id, "followers", 1), Delta(follower_id, "following", 1)],
                    shards=counter_shards,
                ),
            },
        )
    return FollowOutcome(follow_id, created=follow_id is not None)
