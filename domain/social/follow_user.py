"""Use case: follow a user (seeds/followers-following.md "Writes")."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import Delta, add_deltas
from domain.db import new_id
from domain.errors import NotFoundError
from domain.outbox.append import append_event
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

_INSERT = text(
    """
    INSERT INTO follows (id, follower_id, followee_id, source)
    VALUES (:id, :follower, :followee, :source)
    ON CONFLICT (follower_id, followee_id) WHERE deleted_at IS NULL DO NOTHING
    RETURNING id
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

    One transaction: the follow row (``ON CONFLICT DO NOTHING`` on the live pair),
    the ``follow.created`` outbox row and both counters (+1 followers of the followee,
    +1 following of the follower) commit together, or not at all. A follow that is
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
            _INSERT,
            {"id": new_id(), "follower": follower_id, "followee": followee_id, "source": source},
        )
        if follow_id is None:
            return FollowOutcome(None, created=False)
        await append_event(
            conn,
            "follow.created",
            follow_id,
            {"follower_id": str(follower_id), "followee_id": str(followee_id)},
        )
        # Counters last: the shard row lock is then held for the shortest time.
        await add_deltas(
            conn,
            [Delta(followee_id, "followers", 1), Delta(follower_id, "following", 1)],
            shards=counter_shards,
        )
    return FollowOutcome(follow_id, created=True)
