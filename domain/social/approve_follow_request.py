"""Use case: a private account's owner approves a follow request (docs/seeds/chroma-architecture.md
"POST /v1/users/:userID/follow/approve")."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import FollowCreated, FollowRequestApproved
from domain.outbox.unit_of_work import unit_of_work
from domain.social.errors import BlockedError, FollowRequestNotFoundError
from domain.social.follow_user import FollowOutcome, check_can_follow, follow_ctes, follow_params
from domain.social.pairs import lock_pair
from domain.visibility.predicates import is_live

# Delete the request and, only if one was, write the follow: one statement.
_APPROVE = text(
    f"""
    WITH r AS (
        DELETE FROM follow_requests WHERE requester_id = :follower AND target_id = :followee
        RETURNING id
    ), {follow_ctes("EXISTS (SELECT 1 FROM r)")}
    SELECT (SELECT id FROM r) AS request_id, (SELECT id FROM f) AS follow_id
    """
)

# Its own statement: its snapshot sees a switch to public that took the request meanwhile.
_FOLLOWING = text(
    "SELECT EXISTS (SELECT 1 FROM follows WHERE follower_id = :follower"
    f" AND followee_id = :followee AND {is_live()})"
)


async def approve_follow_request(
    engine: AsyncEngine,
    target_id: uuid.UUID,
    requester_id: uuid.UUID,
    *,
    counter_shards: int,
    dispatcher: Dispatcher | None = None,
) -> FollowOutcome:
    """Delete the pending request, write the follow as follow_user does and
    ``follow_request.approved``, under the pair lock. Idempotent. Raises
    FollowRequestNotFoundError, UserUnavailableError or NotFoundError."""
    if target_id == requester_id:
        raise FollowRequestNotFoundError()
    async with unit_of_work(engine, dispatcher) as uow:
        conn = uow.conn
        await lock_pair(conn, requester_id, target_id)
        try:
            await check_can_follow(conn, requester_id, target_id)
        except BlockedError:  # a block cancels requests both ways: none can be pending
            raise FollowRequestNotFoundError() from None
        event = await uow.record(FollowCreated(requester_id, target_id), key="event")
        params = follow_params(
            requester_id, target_id, source="profile", counter_shards=counter_shards
        )
        row = (await conn.execute(_APPROVE, {**params, **event.params})).one()
        if row.follow_id is not None:
            uow.written(event)
            await uow.record(
                FollowRequestApproved(requester_id, target_id), aggregate_id=row.follow_id
            )
        if row.request_id is None and not await conn.scalar(
            _FOLLOWING, {"follower": requester_id, "followee": target_id}
        ):
            raise FollowRequestNotFoundError()
    return FollowOutcome(row.follow_id, created=row.follow_id is not None)
