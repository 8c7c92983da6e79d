"""Use case: a requester withdraws their pending follow request."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import FollowRequestCancelled
from domain.outbox.unit_of_work import Entry, UnitOfWork, outbox_insert_sql, unit_of_work


def cancel_ctes() -> str:
    """The data-modifying CTEs ``cancelled`` (delete the pending request of :follower to
    :followee) and ``cancel_event`` (its ``follow_request.cancelled`` outbox row, only if
    one was deleted), as SQL text for a ``WITH`` clause. Bind :func:`record_cancel`.
    unfollow_user includes them, so unfollowing a requested account withdraws the request.
    """
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
    """The recorded ``follow_request.cancelled`` event of :func:`cancel_ctes`; bind its
    ``params`` with ``:follower`` and ``:followee``."""
    return await uow.record(FollowRequestCancelled(requester_id, target_id), key="cancel")


_CANCEL = text(f"WITH {cancel_ctes()} SELECT id FROM cancelled")


async def cancel_follow_request(
    engine: AsyncEngine,
    requester_id: uuid.UUID,
    target_id: uuid.UUID,
    *,
    dispatcher: Dispatcher | None = None,
) -> bool:
    """Withdraw the pending request of ``requester_id`` to ``target_id``; return True if
    one was pending. One statement: the row is deleted with a
    ``follow_request.cancelled`` outbox row ``{requester_id, target_id}``. Idempotent;
    raises nothing (no request, or no such user, is simply nothing to cancel).
    """
    async with unit_of_work(engine, dispatcher) as uow:
        event = await record_cancel(uow, requester_id, target_id)
        request_id = await uow.conn.scalar(
            _CANCEL, {"follower": requester_id, "followee": target_id, **event.params}
        )
        if request_id is not None:
            uow.written(event)
    return request_id is not None
