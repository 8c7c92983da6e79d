"""Use case: a private account's owner rejects a follow request."""

from __future__ import annotations

import json
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import new_id
from domain.social.errors import FollowRequestNotFoundError

_REJECT = text(
    """
    WITH r AS (
        DELETE FROM follow_requests WHERE requester_id = :requester AND target_id = :target
        RETURNING id
    ), event AS (
        INSERT INTO outbox (id, topic, aggregate_id, payload)
        SELECT :event_id, 'follow_request.rejected', r.id, CAST(:payload AS jsonb) FROM r
    )
    SELECT id FROM r
    """
)


async def reject_follow_request(
    engine: AsyncEngine, target_id: uuid.UUID, requester_id: uuid.UUID
) -> None:
    """``target_id`` rejects the pending request of ``requester_id``: the request row is
    deleted with a ``follow_request.rejected`` outbox row ``{requester_id, target_id}``,
    in one statement. Nothing else changes; the requester may ask again.

    Raises FollowRequestNotFoundError (a NotFoundError) when no request is pending.
    """
    async with engine.begin() as conn:
        request_id = await conn.scalar(
            _REJECT,
            {
                "requester": requester_id,
                "target": target_id,
                "event_id": new_id(),
                "payload": json.dumps(
                    {"requester_id": str(requester_id), "target_id": str(target_id)}
                ),
            },
        )
        if request_id is None:
            raise FollowRequestNotFoundError()
