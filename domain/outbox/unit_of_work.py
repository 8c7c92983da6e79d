"""The unit of work of a mutating use case: one transaction (``engine.begin()``) whose
events are recorded by :meth:`UnitOfWork.record`, the one way a use case writes an
event. Each event's consumers are resolved once, when it is recorded, and enqueued
right after the commit (the relay is the safety net).
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.db import new_id
from domain.outbox.dispatch import REDRIVE_AFTER_S, Dispatcher, dispatch_after_commit
from domain.outbox.events import Event
from domain.outbox.models import outbox


@dataclass(frozen=True)
class Entry:
    """A recorded event: its outbox id, the consumers to enqueue after the commit (none
    without a dispatcher) and, when the caller's statement writes its row, the ``key``
    of its bind parameters."""

    id: uuid.UUID
    event: Event
    consumers: tuple[str, ...]
    key: str | None = None

    @property
    def delay(self) -> int:
        """Seconds the relay waits before re-driving the row (only if enqueued here)."""
        return REDRIVE_AFTER_S if self.consumers else 0

    @property
    def payload(self) -> str:
        """The event's payload as JSON text (for a ``CAST(… AS jsonb)`` parameter)."""
        return json.dumps(self.event.payload())

    @property
    def params(self) -> dict[str, Any]:
        """The bind parameters ``:<key>_id``, ``:<key>_payload``, ``:<key>_delay`` of
        :func:`outbox_insert_sql` (same ``key``)."""
        return {
            f"{self.key}_id": self.id,
            f"{self.key}_payload": self.payload,
            f"{self.key}_delay": self.delay,
        }


class UnitOfWork:
    """One open transaction (``conn``) and the events recorded in it."""

    def __init__(self, conn: AsyncConnection, dispatcher: Dispatcher | None) -> None:
        self.conn = conn
        self.dispatcher = dispatcher
        self.entries: list[Entry] = []

    async def record(
        self, event: Event, *, aggregate_id: uuid.UUID | None = None, key: str | None = None
    ) -> Entry:
        """Record ``event`` in this transaction; its consumers are enqueued after the
        commit. Without ``key`` its outbox row is inserted now. With ``key`` the
        caller's statement writes it (:func:`outbox_insert_sql`, bound to the entry's
        ``params``), only if the change happened: confirm with :meth:`written`.
        """
        consumers = (
            () if self.dispatcher is None else self.dispatcher.registry.consumers(type(event))
        )
        entry = Entry(new_id(), event, consumers, key)
        if key is None:
            await self.conn.execute(insert(outbox).values(**_row(entry, aggregate_id)))
            self.entries.append(entry)
        return entry

    def written(self, *entries: Entry) -> None:
        """Confirm entries recorded with a ``key`` that the caller's statement wrote."""
        self.entries.extend(entries)

    async def dispatch(self) -> None:
        """After the commit: enqueue each entry's consumers (never raises: what fails
        waits for the relay)."""
        for entry in self.entries:
            if entry.consumers:
                await dispatch_after_commit(
                    self.dispatcher, entry.id, entry.event.topic, entry.consumers
                )


def _row(entry: Entry, aggregate_id: uuid.UUID | None) -> dict[str, Any]:
    values: dict[str, Any] = {
        "id": entry.id,
        "topic": entry.event.topic,
        "aggregate_id": aggregate_id or entry.event.aggregate_id,
        "payload": entry.event.payload(),
    }
    if entry.delay:
        values["available_at"] = func.now() + dt.timedelta(seconds=entry.delay)
    return values


def outbox_insert_sql(
    event_type: type[Event],
    *,
    source: str,
    aggregate: str,
    key: str = "event",
    event_id: str | None = None,
    payload: str | None = None,
    delay: str | None = None,
) -> str:
    """SQL text of an ``INSERT INTO outbox … SELECT … FROM <source>`` writing the rows of
    entries recorded with ``key`` (:meth:`UnitOfWork.record`), to sit in a
    data-modifying CTE: one row per row of ``source`` (none when the change did not
    happen). ``aggregate`` is the SQL expression of the row's ``aggregate_id``
    (e.g. ``f.id``). The id, payload and delay are the entry's ``params`` unless
    ``event_id``/``payload``/``delay`` give SQL expressions (a statement writing
    several entries' rows: ``payload`` must be ``jsonb``).
    """
    topic = event_type.topic.replace("'", "''")
    return (
        "INSERT INTO outbox (id, topic, aggregate_id, payload, available_at)"
        f" SELECT {event_id or f':{key}_id'}, '{topic}', {aggregate},"
        f" {payload or f'CAST(:{key}_payload AS jsonb)'},"
        f" now() + make_interval(secs => {delay or f':{key}_delay'})"
        f" FROM {source}"
    )


@asynccontextmanager
async def unit_of_work(
    engine: AsyncEngine, dispatcher: Dispatcher | None = None
) -> AsyncIterator[UnitOfWork]:
    """``async with unit_of_work(engine, dispatcher) as uow:`` runs the block in one
    transaction (committed when it ends, rolled back if it raises) and enqueues the
    consumers of the events recorded through ``uow`` once the commit succeeded."""
    async with engine.begin() as conn:
        uow = UnitOfWork(conn, dispatcher)
        yield uow
    await uow.dispatch()
