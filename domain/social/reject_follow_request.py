"""Use case: a private account's owner rejects a follow request."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import FollowRequestRejected
from domain.outbox.unit_of_work import outbox_insert_sql, unit_of_work
from domain.social.errors import FollowRequestNotFoundError

_REJECT = text(
    f"""
    WITH r AS (
        DELETE FROM follow_requests WHERE requester_id = :requester AND target_id = :target
        RETURNING id
    ), event AS (
        {outbox_insert_sql(FollowRequestRejected, source="r", aggregate="r.id")}
    )
    SELECT id FROM r
    """
)


async def reject_follow_request(
    engine: AsyncEngine,
    target_id: uuid.UUID,
    requester_id: uuid.UUID,
    *,
    dispatcher: Dispatcher | None = None,
) -> None:
    """Delete the pending request with ``follow_request.rejected``; raises
    FollowRequestNotFoundError."""
    async with unit_of_work(engine, dispatcher) as uow:
        event = await uow.record(FollowRequestRejected(requester_id, target_id), key="event")
        request_id = await uow.conn.scalar(
            _REJECT, {"requester": requester_id, "target": target_id, **event.params}
        )
        if request_id is None:
            raise FollowRequestNotFoundError()
        uow.written(event)
