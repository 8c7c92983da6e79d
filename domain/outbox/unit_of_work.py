"""The unit of work of a mutating use case: one transaction (``engine.begin()``) that
collects the events it appends and dispatches them right after the commit (the relay
is the safety net).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.db import new_id
from domain.outbox.append import append, insert_params
from domain.outbox.dispatch import Dispatcher, dispatch_after_commit
from domain.outbox.events import Event
from domain.outbox.registry import has_consumers


@dataclass(frozen=True)
class Staged:
    """An event to be written by a statement of the caller's (:func:`insert_sql`): its id
    and its bind parameters. Record it with :meth:`UnitOfWork.written` once the
    statement wrote it."""

    id: uuid.UUID
    event: Event
    params: dict[str, Any]


class UnitOfWork:
    """One open transaction (``conn``) and the events appended in it."""

    def __init__(self, conn: AsyncConnection, dispatcher: Dispatcher | None) -> None:
        self.conn = conn
        self.dispatcher = dispatcher
        self.events: list[tuple[uuid.UUID, Event]] = []

    def _dispatches(self, event: Event) -> bool:
        return self.dispatcher is not None and has_consumers(type(event))

    async def append(self, event: Event, *, aggregate_id: uuid.UUID | None = None) -> uuid.UUID:
        """Append ``event`` to the outbox in this transaction (see
        :func:`domain.outbox.append.append`); it is dispatched after the commit."""
        event_id = await append(
            self.conn,
            event,
            aggregate_id=aggregate_id,
            dispatched_by_caller=self._dispatches(event),
        )
        self.events.append((event_id, event))
        return event_id

    def stage(self, event: Event, *, key: str = "event") -> Staged:
        """A fresh id and the bind parameters for writing ``event`` with
        :func:`domain.outbox.append.insert_sql` (same ``key``)."""
        event_id = new_id()
        params = insert_params(
            event, event_id, key=key, dispatched_by_caller=self._dispatches(event)
        )
        return Staged(event_id, event, params)

    def delay_params(self, event_type: type[Event], *, key: str = "event") -> dict[str, Any]:
        """The delay parameter alone, for a statement that writes several events of
        ``event_type`` from SQL expressions (record each with :meth:`written_event`)."""
        dispatches = self.dispatcher is not None and has_consumers(event_type)
        return insert_params(None, new_id(), key=key, dispatched_by_caller=dispatches)

    def written(self, *staged: Staged) -> None:
        """Record staged events that the statement wrote (to dispatch after commit)."""
        self.events.extend((s.id, s.event) for s in staged)

    def written_event(self, event_id: uuid.UUID, event: Event) -> None:
        """Record an event a statement wrote under ``event_id``."""
        self.events.append((event_id, event))

    async def dispatch(self) -> None:
        """After the commit: hand every event with a consumer to the dispatcher (never
        raises: what fails waits for the relay)."""
        for event_id, event in self.events:
            if self._dispatches(event):
                await dispatch_after_commit(self.dispatcher, event_id, event.topic)


@asynccontextmanager
async def unit_of_work(
    engine: AsyncEngine, dispatcher: Dispatcher | None = None
) -> AsyncIterator[UnitOfWork]:
    """``async with unit_of_work(engine, dispatcher) as uow:`` runs the block in one
    transaction (committed when it ends, rolled back if it raises) and dispatches the
    events appended through ``uow`` once the commit succeeded."""
    async with engine.begin() as conn:
        uow = UnitOfWork(conn, dispatcher)
        yield uow
    await uow.dispatch()
