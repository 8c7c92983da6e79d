"""Use case: follow a user, or ask to if private (docs/seeds/followers-following.md "Writes")."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.counters import Delta, shard_rows, upsert_rows_sql
from domain.db import new_id
from domain.errors import NotFoundError
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import FollowCreated, FollowRequestCreated
from domain.outbox.unit_of_work import UnitOfWork, outbox_insert_sql, unit_of_work
from domain.social.errors import BlockedError, SelfFollowError, UserUnavailableError
from domain.social.pairs import lock_pair
from domain.visibility.predicates import is_live


@dataclass(frozen=True)
class FollowOutcome:
    """``state`` ``following`` or ``requested``; ``created`` False if it existed; ``follow_id`` of a
    new follow."""

    follow_id: uuid.UUID | None
    created: bool
    state: Literal["following", "requested"] = "following"

    @property
    def requested(self) -> bool:
        """Whether the follow awaits approval."""
        return self.state == "requested"


# Both accounts FOR KEY SHARE before the check: a ban waits for the follow, or is seen.
_CHECK = text(
    """
    SELECT u.id, u.status, u.is_private,
      EXISTS (SELECT 1 FROM blocks
              WHERE (blocker_id = :follower AND blocked_id = :followee)
                 OR (blocker_id = :followee AND blocked_id = :follower)) AS blocked
    FROM users u WHERE u.id IN (:follower, :followee)
    ORDER BY u.id
    FOR KEY SHARE OF u
    """
)


def follow_ctes(gate: str | None = None) -> str:
    """CTEs ``f`` (the follow, ``ON CONFLICT DO NOTHING``), ``event`` and ``counted``, the last two
    only on insert; ``gate``: an SQL condition. Bind :func:`follow_params` and the event's
    ``params``."""
    if gate is None:
        row = "VALUES (:id, :follower, :followee, :source)"
    else:
        row = (
            "SELECT CAST(:id AS uuid), CAST(:follower AS uuid), CAST(:followee AS uuid),"
            f" CAST(:source AS text) WHERE {gate}"
        )
    return f"""
    f AS (
        INSERT INTO follows (id, follower_id, followee_id, source)
        {row}
        ON CONFLICT (follower_id, followee_id) WHERE {is_live()} DO NOTHING
        RETURNING id
    ), event AS (
        {outbox_insert_sql(FollowCreated, source="f", aggregate="f.id")}
    ), counted AS (
        {upsert_rows_sql("EXISTS (SELECT 1 FROM f)")}
    )
    """


def follow_params(
    follower_id: uuid.UUID, followee_id: uuid.UUID, *, source: str, counter_shards: int
) -> dict[str, Any]:
    """Bind parameters of :func:`follow_ctes` but the event's: a new id and the counter rows."""
    return {
        "id": new_id(),
        "follower": follower_id,
        "followee": followee_id,
        "source": source,
        **shard_rows(
            [Delta(followee_id, "followers", 1), Delta(follower_id, "following", 1)],
            shards=counter_shards,
        ),
    }


_FOLLOW = text(f"WITH {follow_ctes()} SELECT id FROM f")

# Share-lock the target's row: a switch to public accepts this request or sees it absent.
_PRIVATE_CHECK = text(
    f"""
    SELECT u.is_private,
           EXISTS (SELECT 1 FROM follows
                   WHERE follower_id = :follower AND followee_id = :followee
                     AND {is_live()}) AS following
    FROM users u WHERE u.id = :followee
    FOR SHARE OF u
    """
)

_REQUEST = text(
    f"""
    WITH r AS (
        INSERT INTO follow_requests (id, requester_id, target_id)
        VALUES (:id, :follower, :followee)
        ON CONFLICT (requester_id, target_id) DO NOTHING
        RETURNING id
    ), event AS (
        {outbox_insert_sql(FollowRequestCreated, source="r", aggregate="r.id")}
    )
    SELECT id FROM r
    """
)


async def follow_user(
    engine: AsyncEngine,
    follower_id: uuid.UUID,
    followee_id: uuid.UUID,
    *,
    counter_shards: int,
    source: str = "profile",
    dispatcher: Dispatcher | None = None,
) -> FollowOutcome:
    """Follow (row, ``follow.created``, counters in one transaction) or, for a private account,
    request. Idempotent. Raises SelfFollowError, NotFoundError, UserUnavailableError or
    BlockedError."""
    if follower_id == followee_id:
        raise SelfFollowError()
    async with unit_of_work(engine, dispatcher) as uow:
        conn = uow.conn
        await lock_pair(conn, follower_id, followee_id)
        if await check_can_follow(conn, follower_id, followee_id):
            outcome = await _request(uow, follower_id, followee_id)
            if outcome is not None:
                return outcome
        event = await uow.record(FollowCreated(follower_id, followee_id), key="event")
        params = follow_params(
            follower_id, followee_id, source=source, counter_shards=counter_shards
        )
        follow_id = await conn.scalar(_FOLLOW, {**params, **event.params})
        if follow_id is not None:
            uow.written(event)
    return FollowOutcome(follow_id, created=follow_id is not None)


async def check_can_follow(
    conn: AsyncConnection, follower_id: uuid.UUID, followee_id: uuid.UUID
) -> bool:
    """Whether ``followee_id`` is private, after checking both active and unblocked (both then ``FOR
    KEY SHARE``). Raises NotFoundError, UserUnavailableError or BlockedError."""
    rows = {
        r.id: r
        for r in await conn.execute(_CHECK, {"follower": follower_id, "followee": followee_id})
    }
    follower, followee = rows.get(follower_id), rows.get(followee_id)
    if follower is None or followee is None:
        raise NotFoundError("No user has that id.")
    if followee.status != "active" or follower.status != "active":
        raise UserUnavailableError()
    if followee.blocked:
        raise BlockedError()
    return bool(followee.is_private)


async def _request(
    uow: UnitOfWork, follower_id: uuid.UUID, followee_id: uuid.UUID
) -> FollowOutcome | None:
    """The private branch of follow_user; None if the account turned public meanwhile."""
    conn = uow.conn
    row = (
        await conn.execute(_PRIVATE_CHECK, {"follower": follower_id, "followee": followee_id})
    ).one()
    if not row.is_private:
        return None
    if row.following:
        return FollowOutcome(None, created=False)
    event = await uow.record(FollowRequestCreated(follower_id, followee_id), key="event")
    request_id = await conn.scalar(
        _REQUEST,
        {"id": new_id(), "follower": follower_id, "followee": followee_id, **event.params},
    )
    if request_id is not None:
        uow.written(event)
    return FollowOutcome(None, created=request_id is not None, state="requested")
