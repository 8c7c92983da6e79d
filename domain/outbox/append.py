"""Append events to the outbox inside the caller's transaction."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import func, insert
from sqlalchemy.ext.asyncio import AsyncConnection

from domain.db import new_id
from domain.outbox.dispatch import REDRIVE_AFTER_S
from domain.outbox.models import outbox


async def append_event(
    conn: AsyncConnection,
    topic: str,
    aggregate_id: uuid.UUID,
    payload: Mapping[str, Any],
    *,
    dispatched_by_caller: bool = False,
) -> uuid.UUID:
    """Insert one outbox row (``topic``, ``aggregate_id``, JSON ``payload``) and return its id.

    Runs in the caller's open transaction so the event commits or rolls back with the
    change it describes (the transactional-outbox pattern; docs/seeds/feed-fan-out.md).
    With ``dispatched_by_caller`` the caller enqueues it right after commit, so the
    relay holds off for REDRIVE_AFTER_S before re-driving it.
    """
    event_id = new_id()
    values: dict[str, Any] = {
        "id": event_id,
        "topic": topic,
        "aggregate_id": aggregate_id,
        "payload": dict(payload),
    }
    if dispatched_by_caller:
        values["available_at"] = func.now() + dt.timedelta(seconds=REDRIVE_AFTER_S)
    await conn.execute(insert(outbox).values(**values))
    return event_id
