"""Writing events to the outbox inside the caller's transaction: :func:`append` for a
statement of its own, :func:`insert_sql` + :func:`insert_params` for an event that must
be written by the same statement as the change it describes (only if that change
happened)."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from typing import Any

from sqlalchemy import func, insert
from sqlalchemy.ext.asyncio import AsyncConnection

from domain.db import new_id
from domain.outbox.dispatch import REDRIVE_AFTER_S
from domain.outbox.events import Event
from domain.outbox.models import outbox


async def append(
    conn: AsyncConnection,
    event: Event,
    *,
    aggregate_id: uuid.UUID | None = None,
    dispatched_by_caller: bool = False,
    event_id: uuid.UUID | None = None,
) -> uuid.UUID:
    """Insert ``event``'s outbox row in the caller's transaction; return its id (UUIDv7,
    or ``event_id``). With ``dispatched_by_caller`` the relay waits REDRIVE_AFTER_S.
    """
    event_id = event_id or new_id()
    values: dict[str, Any] = {
        "id": event_id,
        "topic": event.topic,
        "aggregate_id": aggregate_id or event.aggregate_id,
        "payload": event.payload(),
    }
    if dispatched_by_caller:
        values["available_at"] = func.now() + dt.timedelta(seconds=REDRIVE_AFTER_S)
    await conn.execute(insert(outbox).values(**values))
    return event_id


def insert_sql(
    event_type: type[Event],
    *,
    source: str,
    aggregate: str,
    key: str = "event",
    event_id: str | None = None,
    payload: str | None = None,
) -> str:
    """SQL text of an ``INSERT INTO outbox … SELECT … FROM <source>`` for ``event_type``
    (its topic generated from the class), to sit in a data-modifying CTE: one row per row
    of ``source`` (none when the change did not happen). ``aggregate`` is the SQL
    expression of the row's ``aggregate_id`` (e.g. ``f.id``). The id, payload and delay
    come from the bind parameters ``:<key>_id``, ``:<key>_payload`` and ``:<key>_delay``
    of :func:`insert_params`, unless ``event_id``/``payload`` give SQL expressions
    (a statement writing several rows: ``payload`` must be ``jsonb``).
    """
    topic = event_type.topic.replace("'", "''")
    return (
        "INSERT INTO outbox (id, topic, aggregate_id, payload, available_at)"
        f" SELECT {event_id or f':{key}_id'}, '{topic}', {aggregate},"
        f" {payload or f'CAST(:{key}_payload AS jsonb)'},"
        f" now() + make_interval(secs => :{key}_delay)"
        f" FROM {source}"
    )


def insert_params(
    event: Event | None,
    event_id: uuid.UUID,
    *,
    key: str = "event",
    dispatched_by_caller: bool = False,
) -> dict[str, Any]:
    """The bind parameters of :func:`insert_sql` for ``event`` (None: only the delay,
    for a statement whose ids and payloads are expressions)."""
    params: dict[str, Any] = {f"{key}_delay": REDRIVE_AFTER_S if dispatched_by_caller else 0}
    if event is not None:
        params[f"{key}_id"] = event_id
        params[f"{key}_payload"] = encode_payload(event)
    return params


def encode_payload(event: Event) -> str:
    """``event``'s payload as JSON text (for a ``CAST(… AS jsonb)`` bind parameter)."""
    return json.dumps(event.payload())
