"""Use case: block a user; the block ends follows both ways and refuses new ones."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import Delta, add_deltas
from domain.errors import NotFoundError
from domain.moderation.account_locks import lock_statuses
from domain.notifications.forget import forget_between
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import BlockCreated, FollowRemoved, FollowRequestCancelled
from domain.outbox.unit_of_work import unit_of_work
from domain.social.errors import SelfBlockError
from domain.social.pairs import lock_pair
from domain.visibility.predicates import is_live

_INSERT_BLOCK = text(
    """
    INSERT INTO blocks (blocker_id, blocked_id) VALUES (:blocker, :blocked)
    ON CONFLICT DO NOTHING RETURNING true
    """
)

# Requests end before follows: one accepted by a concurrent switch is then seen as a follow.
_CANCEL_REQUESTS = text(
    """
    DELETE FROM follow_requests
    WHERE (requester_id = :blocker AND target_id = :blocked)
       OR (requester_id = :blocked AND target_id = :blocker)
    RETURNING id, requester_id, target_id
    """
)

_END_FOLLOWS = text(
    f"""
    UPDATE follows SET deleted_at = now()
    WHERE {is_live()}
      AND ((follower_id = :blocker AND followee_id = :blocked)
        OR (follower_id = :blocked AND followee_id = :blocker))
    RETURNING id, follower_id, followee_id
    """
)


async def block_user(
    engine: AsyncEngine,
    blocker_id: uuid.UUID,
    blocked_id: uuid.UUID,
    *,
    counter_shards: int,
    dispatcher: Dispatcher | None = None,
) -> bool:
    """Block ``blocked_id``; True if new. Under the pair lock: ends requests and follows both ways,
    ``block.created``, removes mutual notifications. Idempotent.
    Raises SelfBlockError or NotFoundError."""
    if blocker_id == blocked_id:
        raise SelfBlockError()
    async with unit_of_work(engine, dispatcher) as uow:
        conn = uow.conn
        await lock_pair(conn, blocker_id, blocked_id)
        # FOR KEY SHARE on both: a concurrent ban waits, or the block sees it.
        statuses = await lock_statuses(conn, [blocker_id, blocked_id])
        active = {i: s == "active" for i, s in statuses.items()}
        if blocked_id not in active:
            raise NotFoundError("No user has that id.")
        created = await conn.scalar(_INSERT_BLOCK, {"blocker": blocker_id, "blocked": blocked_id})
        cancelled = (
            await conn.execute(_CANCEL_REQUESTS, {"blocker": blocker_id, "blocked": blocked_id})
        ).all()
        for request_id, requester, target in cancelled:
            await uow.record(
                FollowRequestCancelled(requester, target, reason="block"), aggregate_id=request_id
            )
        ended = (
            await conn.execute(_END_FOLLOWS, {"blocker": blocker_id, "blocked": blocked_id})
        ).all()
        deltas: list[Delta] = []
        for follow_id, follower, followee in ended:
            await uow.record(
                FollowRemoved(follower, followee, reason="block"), aggregate_id=follow_id
            )
            # Only what the counters counted: a follower if active, a followee if active.
            if active.get(follower):
                deltas.append(Delta(followee, "followers", -1))
            if active.get(followee):
                deltas.append(Delta(follower, "following", -1))
        if created:
            await uow.record(BlockCreated(blocker_id, blocked_id))
        if created:
            deltas += await forget_between(conn, blocker_id, blocked_id)
        await add_deltas(conn, deltas, shards=counter_shards)
    return bool(created)
