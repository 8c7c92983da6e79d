"""Use case: a requester withdraws their pending follow request."""

from __future__ import annotations

import json
import uuid
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import new_id


def cancel_ctes() -> str:
    """The data-modifying CTEs ``cancelled`` (delete the pending request of :follower to
    :followee) and ``cancel_event`` (its ``follow_request.cancelled`` outbox row, only if
    one was deleted), as SQL text for a ``WITH`` clause. Bind :func:`cancel_params`.
    unfollow_user includes them, so unfollowing a requested account withdraws the request.
    """
    return """
    cancelled AS (
        DELETE FROM follow_requests WHERE requester_id = :follower AND target_id = :followee
        RETURNING id
    ), cancel_event AS (
        INSERT INTO outbox (id, topic, aggregate_id, payload)
        SELECT :cancel_event_id, 'follow_request.cancelled', cancelled.id,
               CAST(:cancel_payload AS jsonb)
        FROM cancelled
    )
    """


def cancel_params(requester_id: uuid.UUID, target_id: uuid.UUID) -> dict[str, Any]:
    """The bind parameters of :func:`cancel_ctes` (the event's payload is
    ``{requester_id, target_id}``)."""
    return {
        "follower": requester_id,
        "followee": target_id,
        "cancel_event_id": new_id(),
        "cancel_payload": json.dumps(
            {"requester_id": str(requester_id), "target_id": str(target_id)}
        ),
    }


_CANCEL = text(f"WITH {cancel_ctes()} SELECT id FROM cancelled")


async def cancel_follow_request(
    engine: AsyncEngine, requester_id: uuid.UUID, target_id: uuid.UUID
) -> bool:
    """Withdraw the pending request of ``requester_id`` to ``target_id``; return True if
    one was pending. One statement: the row is deleted with a
    ``follow_request.cancelled`` outbox row ``{requester_id, target_id}``. Idempotent;
    raises nothing (no request, or no such user, is simply nothing to cancel).
    """
    async with engine.begin() as conn:
        request_id = await conn.scalar(_CANCEL, cancel_params(requester_id, target_id))
    return request_id is not None
