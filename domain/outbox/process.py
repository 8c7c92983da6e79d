"""Consuming outbox events: the relay's claim, per-event processing, dead letters.

Consumers are idempotent and an event is marked dispatched only after its consumer
finished, so a crash anywhere means the event runs again, never that it is lost.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import new_id

#: A consumer of one topic: receives the event's JSON payload (plus EVENT_ID_KEY).
Handler = Callable[[Mapping[str, Any]], Awaitable[None]]

#: The key under which :func:`process_event` adds the outbox event's id (a string) to the
#: payload it hands each consumer, for consumers that key their idempotency on the event
#: (notifications: "each notification created once per event even when its job runs
#: twice"). Stored payloads never carry it.
EVENT_ID_KEY = "_event_id"

#: After the relay enqueues an event, it waits this long before enqueuing it again.
RELAY_RETRY_S = 30


@dataclass(frozen=True)
class DueEvent:
    """An outbox event the relay should enqueue."""

    id: uuid.UUID
    topic: str


async def claim_due_events(engine: AsyncEngine, *, limit: int = 500) -> list[DueEvent]:
    """Return up to ``limit`` undispatched events that are due, oldest first, and push
    their due time RELAY_RETRY_S ahead (``FOR UPDATE SKIP LOCKED``: concurrent relays
    never claim the same row)."""
    async with engine.begin() as conn:
        rows = await conn.execute(
            text(
                """
                UPDATE outbox SET available_at = now() + make_interval(secs => :retry)
                WHERE id IN (
                    SELECT id FROM outbox
                    WHERE dispatched_at IS NULL AND available_at <= now()
                    ORDER BY available_at LIMIT :limit
                    FOR UPDATE SKIP LOCKED
                )
                RETURNING id, topic
                """
            ),
            {"limit": limit, "retry": RELAY_RETRY_S},
        )
        return sorted((DueEvent(r.id, r.topic) for r in rows), key=lambda e: e.id.bytes)


async def process_event(
    engine: AsyncEngine, event_id: uuid.UUID, handlers: Mapping[str, Handler]
) -> str:
    """Run the consumer of one event and mark it dispatched; return ``done``,
    ``already`` (dispatched before) or ``missing`` (no such row).

    The handler gets the stored payload plus ``EVENT_ID_KEY`` (the event's id). Topics
    without a handler are simply marked dispatched. Raises whatever the consumer raises
    (the caller retries, then dead-letters).
    """
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text("SELECT topic, payload, dispatched_at FROM outbox WHERE id = :id"),
                {"id": event_id},
            )
        ).first()
    if row is None:
        return "missing"
    if row.dispatched_at is not None:
        return "already"
    handler = handlers.get(row.topic)
    if handler is not None:
        await handler({**row.payload, EVENT_ID_KEY: str(event_id)})
    await _mark_dispatched(engine, event_id)
    return "done"


def compose_handlers(*maps: Mapping[str, Handler]) -> dict[str, Handler]:
    """Merge ``{topic: handler}`` maps; a topic handled by several maps gets one handler
    that runs each of them in turn, in the order the maps are given.

    If one raises, the composite raises and the job's retry runs all of them again, so
    every handler must be idempotent (they are: docs/design.md "consumers are idempotent").
    """
    by_topic: dict[str, list[Handler]] = {}
    for m in maps:
        for topic, handler in m.items():
            by_topic.setdefault(topic, []).append(handler)
    return {
        topic: hs[0] if len(hs) == 1 else _run_in_turn(tuple(hs)) for topic, hs in by_topic.items()
    }


def _run_in_turn(handlers: tuple[Handler, ...]) -> Handler:
    async def run(payload: Mapping[str, Any]) -> None:
        for handler in handlers:
            await handler(payload)

    return run


async def dead_letter(
    engine: AsyncEngine, event_id: uuid.UUID, error: str, attempts: int
) -> str | None:
    """Record that ``event_id`` failed ``attempts`` times and stop re-driving it; return
    its topic (None if the event is gone)."""
    async with engine.begin() as conn:
        topic: str | None = await conn.scalar(
            text(
                "INSERT INTO dead_letters (id, event_id, topic, error, attempts)"
                " SELECT :id, id, topic, :error, :attempts FROM outbox WHERE id = :event"
                " RETURNING topic"
            ),
            {"id": new_id(), "event": event_id, "error": error[:4000], "attempts": attempts},
        )
        await conn.execute(
            text("UPDATE outbox SET dispatched_at = now() WHERE id = :id"), {"id": event_id}
        )
    return topic


async def redrive_soon(engine: AsyncEngine, event_id: uuid.UUID, *, after_s: float = 1.0) -> None:
    """Make an undispatched event due again in ``after_s`` seconds (its consumer could
    not run because PostgreSQL or Redis was down: the relay re-drives it then)."""
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE outbox SET available_at = now() + make_interval(secs => :after)"
                " WHERE id = :id AND dispatched_at IS NULL"
            ),
            {"id": event_id, "after": after_s},
        )


@dataclass(frozen=True)
class DeadLetter:
    """A dead-lettered event, as ``roost dlq list`` shows it."""

    id: uuid.UUID
    event_id: uuid.UUID
    topic: str
    error: str
    attempts: int
    created_at: Any


async def list_dead_letters(engine: AsyncEngine, *, limit: int = 100) -> list[DeadLetter]:
    """The dead letters not yet replayed, oldest first."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT id, event_id, topic, error, attempts, created_at FROM dead_letters"
                " WHERE replayed_at IS NULL ORDER BY created_at LIMIT :limit"
            ),
            {"limit": limit},
        )
        return [DeadLetter(*r) for r in rows]


async def replay_dead_letters(engine: AsyncEngine, ids: list[uuid.UUID] | None = None) -> int:
    """Put dead-lettered events back in the outbox as due now (all, or those ``ids`` of
    dead letters); the relay re-drives them. Returns how many were replayed."""
    async with engine.begin() as conn:
        rows = await conn.execute(
            text(
                "UPDATE dead_letters SET replayed_at = now() WHERE replayed_at IS NULL"
                + (" AND id = ANY(CAST(:ids AS uuid[]))" if ids else "")
                + " RETURNING event_id"
            ),
            {"ids": ids} if ids else {},
        )
        events = [r[0] for r in rows]
        if events:
            await conn.execute(
                text(
                    "UPDATE outbox SET dispatched_at = NULL, available_at = now()"
                    " WHERE id = ANY(CAST(:ids AS uuid[]))"
                ),
                {"ids": events},
            )
        return len(events)


async def _mark_dispatched(engine: AsyncEngine, event_id: uuid.UUID) -> None:
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE outbox SET dispatched_at = now() WHERE id = :id AND dispatched_at IS NULL"
            ),
            {"id": event_id},
        )


async def outbox_health(engine: AsyncEngine) -> tuple[int, int]:
    """Return (undispatched outbox events, dead letters not replayed), one statement."""
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT (SELECT count(*) FROM outbox WHERE dispatched_at IS NULL),"
                    " (SELECT count(*) FROM dead_letters WHERE replayed_at IS NULL)"
                )
            )
        ).one()
    return int(row[0]), int(row[1])
