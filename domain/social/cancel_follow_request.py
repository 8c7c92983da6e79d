"""Use case: a requester withdraws their pending follow request."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import FollowRequestCancelled
from domain.outbox.unit_of_work import Entry, UnitOfWork, outbox_insert_sql, unit_of_work


def cancel_ctes() -> str:
    """CTEs ``cancelled`` (delete :follower's pending request to :followee) and ``cancel_event``
    (its outbox row, if deleted); bind :func:`record_cancel`."""
    event = outbox_insert_sql(
        FollowRequestCancelled, source="cancelled", aggregate="cancelled.id", key="cancel"
    )
    return f"""
    cancelled AS (
        DELETE FROM follow_requests WHERE requester_id = :follower AND target_id = :followee
        RETURNING id
    ), cancel_event AS (
        {event}
    )
    """


async def record_cancel(uow: UnitOfWork, requester_id: uuid.UUID, target_id: uuid.UUID) -> Entry:
    """The ``follow_request.cancelled`` entry of :func:`cancel_ctes`."""
    return await uow.record(FollowRequestCancelled(requester_id, target_id), key="cancel")


_CANCEL = text(f"WITH {cancel_ctes()} SELECT id FROM cancelled")


async def cancel_follow_request(
    engine: AsyncEngine,
    requester_id: uuid.UUID,
    target_id: uuid.UUID,
    *,
    dispatcher: Dispatcher | None = None,
) -> bool:
    """Withdraw the pending request; True if one was. One statement; idempotent, never raises."""
    async with unit_of_work(engine, dispatcher) as uow:
        event = await record_cancel(uow, requester_id, target_id)
        request_id = await uow.conn.scalar(
            _CANCEL, {"follower": requester_id, "followee": target_id, **event.params}
        )
        if request_id is not None:
            uow.written(event)
    return request_id is not None
