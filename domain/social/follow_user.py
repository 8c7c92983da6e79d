"""Use case: follow a user (docs/seeds/followers-following.md "Writes"); for a private account,
ask to (docs/seeds/chroma-architecture.md: "If target is private, creates a pending follow")."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.counters import Delta, shard_rows, upsert_rows_sql
from domain.db import new_id
from domain.errors import NotFoundError
from domain.outbox.append import insert_sql
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import FollowCreated, FollowRequestCreated
from domain.outbox.unit_of_work import UnitOfWork, unit_of_work
from domain.social.errors import BlockedError, SelfFollowError, UserUnavailableError
from domain.social.pairs import lock_pair


@dataclass(frozen=True)
class FollowOutcome:
    """What a follow did.

    ``state`` is ``following`` (a live follow exists now) or ``requested`` (the target is
    private and a request awaits their approval). ``created`` is False when nothing was
    written: the follow (or the request) already existed, an idempotent retry.
    ``follow_id`` is the new follow's id, if one was inserted.
    """

    follow_id: uuid.UUID | None
    created: bool
    state: Literal["following", "requested"] = "following"

    @property
    def requested(self) -> bool:
        """True when the target is private and the follow waits for their approval."""
        return self.state == "requested"


# Both accounts under FOR KEY SHARE (the lock the follows row's foreign keys take
# anyway, taken before the check): a ban of either waits for this follow, or this check
# sees it, so the counters never count a follow of an inactive account.
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
    """The data-modifying CTEs ``f`` (the live follow of :follower -> :followee, ``ON
    CONFLICT DO NOTHING``), ``event`` (its ``follow.created`` outbox row) and ``counted``
    (both counters), as SQL text for a ``WITH`` clause; the event and the counters are
    written only if a row was inserted. With ``gate`` (an SQL condition, e.g. on an
    earlier CTE) the follow is inserted only where it holds. Bind :func:`follow_params`
    and the staged event's parameters (:meth:`UnitOfWork.stage` of a FollowCreated).

    Shared by follow_user and the request approvals, so every follow is written alike.
    """
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
        ON CONFLICT (follower_id, followee_id) WHERE deleted_at IS NULL DO NOTHING
        RETURNING id
    ), event AS (
        {insert_sql(FollowCreated, source="f", aggregate="f.id")}
    ), counted AS (
        {upsert_rows_sql("EXISTS (SELECT 1 FROM f)")}
    )
    """


def follow_params(
    follower_id: uuid.UUID, followee_id: uuid.UUID, *, source: str, counter_shards: int
) -> dict[str, Any]:
    """The bind parameters of :func:`follow_ctes` but the event's: a fresh UUIDv7 id and
    the counter rows (+1 followers of the followee, +1 following of the follower, each on
    a random shard)."""
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


# The follow row, its outbox event and both counters in one statement (one round trip
# instead of three; the event and the counters are written only if a row was inserted).
_FOLLOW = text(f"WITH {follow_ctes()} SELECT id FROM f")

# Re-read under a share lock on the target's row: switching to public (update_profile)
# updates that row, so a request is either committed before the switch starts (and the
# switch accepts it) or created after it (and sees a public account).
_PRIVATE_CHECK = text(
    """
    SELECT u.is_private,
           EXISTS (SELECT 1 FROM follows
                   WHERE follower_id = :follower AND followee_id = :followee
                     AND deleted_at IS NULL) AS following
    FROM users u WHERE u.id = :followee
    FOR SHARE OF u
    """
)

# The request and its outbox event, only if no request of the pair is pending.
_REQUEST = text(
    f"""
    WITH r AS (
        INSERT INTO follow_requests (id, requester_id, target_id)
        VALUES (:id, :follower, :followee)
        ON CONFLICT (requester_id, target_id) DO NOTHING
        RETURNING id
    ), event AS (
        {insert_sql(FollowRequestCreated, source="r", aggregate="r.id")}
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
    """Make ``follower_id`` follow ``followee_id`` or, if that account is private, ask to.

    Public target: one transaction of three round trips (pair lock, checks, one write
    statement): the follow row (``ON CONFLICT DO NOTHING`` on the live pair), the
    ``follow.created`` outbox row ``{follower_id, followee_id}`` and both counters (+1
    followers of the followee, +1 following of the follower) commit together, or not at
    all. Returns ``state="following"``.

    Private target: if the follower already follows, nothing changes
    (``state="following"``, ``created=False``); otherwise a ``follow_requests`` row and a
    ``follow_request.created`` outbox row ``{requester_id, target_id}`` are written,
    unless a request of the pair is already pending (``state="requested"``; ``created``
    says whether this call wrote it). Counters change only when the request is approved.

    The event is dispatched to its consumers right after the commit (``dispatcher``;
    the relay re-drives it otherwise). Idempotent. Raises SelfFollowError, NotFoundError
    (no such user), UserUnavailableError (either side banned or deleted) or BlockedError
    (a block either way).
    """
    if follower_id == followee_id:
        raise SelfFollowError()
    async with unit_of_work(engine, dispatcher) as uow:
        conn = uow.conn
        await lock_pair(conn, follower_id, followee_id)
        if await check_can_follow(conn, follower_id, followee_id):
            outcome = await _request(uow, follower_id, followee_id)
            if outcome is not None:
                return outcome
        event = uow.stage(FollowCreated(follower_id, followee_id))
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
    """Check, in one statement, that both users exist and are active and that no block
    stands between them; return whether ``followee_id`` is private. Both accounts stay
    under ``FOR KEY SHARE`` until the transaction ends (a ban waits for it).

    Raises NotFoundError, UserUnavailableError or BlockedError (nothing is written).
    """
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
    """The private branch of follow_user; None when the account turned public meanwhile
    (the caller then follows)."""
    conn = uow.conn
    row = (
        await conn.execute(_PRIVATE_CHECK, {"follower": follower_id, "followee": followee_id})
    ).one()
    if not row.is_private:
        return None
    if row.following:
        return FollowOutcome(None, created=False)
    event = uow.stage(FollowRequestCreated(follower_id, followee_id))
    request_id = await conn.scalar(
        _REQUEST,
        {"id": new_id(), "follower": follower_id, "followee": followee_id, **event.params},
    )
    if request_id is not None:
        uow.written(event)
    return FollowOutcome(None, created=request_id is not None, state="requested")
