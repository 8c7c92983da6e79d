"""Append events to the outbox inside the caller's transaction."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from domain.db import new_id
from domain.outbox.models import outbox


async def append_event(
    conn: AsyncConnection, topic: str, aggregate_id: uuid.UUID, payload: Mapping[str, Any]
) -> uuid.UUID:
    """Insert one outbox row (``topic``, ``aggregate_id``, JSON ``payload``) and return its id.

    Runs in the caller's open transaction so the event commits or rolls back with the
    change it describes (the transactional-outbox pattern; seeds/feed-fan-out.md).
    """
    event_id = new_id()
    await conn.execute(
        insert(outbox).values(
            id=event_id, topic=topic, aggregate_id=aggregate_id, payload=dict(payload)
        )
    )
    return event_id
