"""The unit of work of a mutating use case: one transaction whose events are recorded by
:meth:`UnitOfWork.record` and enqueued after the commit (the relay is the safety net)."""

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
    """A recorded event: its outbox id, consumers to enqueue after the commit and, when the caller's
    statement writes its row, its bind-parameter ``key``."""

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
        """Bind parameters ``:<key>_id``, ``:<key>_payload``, ``:<key>_delay`` of
        :func:`outbox_insert_sql`."""
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
        """Record ``event``; its consumers are enqueued after the commit. Without ``key`` the row is
        inserted now; with ``key`` the caller's statement writes it (:func:`outbox_insert_sql`):
        confirm with :meth:`written`."""
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
        """After the commit: enqueue each entry's consumers; never raises (the relay retries)."""
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
    """SQL of ``INSERT INTO outbox … SELECT … FROM <source>`` for a data-modifying CTE: one row per
    ``source`` row for entries recorded with ``key``. ``aggregate`` is the SQL of
    ``aggregate_id``; ``event_id``/``payload``/``delay`` override the entry's ``params``
    (``payload`` must be ``jsonb``)."""
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
    """``async with unit_of_work(engine, dispatcher) as uow:`` one transaction (rolled back if
    the block raises); the recorded events' consumers are enqueued once the commit succeeded."""
    async with engine.begin() as conn:
        uow = UnitOfWork(conn, dispatcher)
        yield uow
    await uow.dispatch()
