"""Consuming outbox events (docs/architecture/outbox.md): the relay's claim, one job per (event,
consumer) with its own retries, dead letter and done marker."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.db import new_id
from domain.outbox.events import Event
from domain.outbox.registry import Registry

#: A consumer's handler of one event type: ``(event, event_id)``; the id keys its idempotency.
Handler = Callable[[Any, uuid.UUID], Awaitable[None]]
#: A consumer: its handler per event type.
Consumer = Mapping[type[Event], Handler]

#: After the relay enqueues an event, it waits this long before enqueuing it again.
RELAY_RETRY_S = 30


@dataclass(frozen=True)
class DueEvent:
    """An outbox event the relay should enqueue, and the consumers already finished."""

    id: uuid.UUID
    topic: str
    finished: frozenset[str] = frozenset()


async def claim_due_events(engine: AsyncEngine, *, limit: int = 500) -> list[DueEvent]:
    """Return up to ``limit`` undispatched events that are due, oldest first, and push
    their due time RELAY_RETRY_S ahead (``FOR UPDATE SKIP LOCKED``: concurrent relays
    never claim the same row), each with the consumers already finished."""
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
                RETURNING id, topic,
                  ARRAY(SELECT consumer FROM outbox_consumers c WHERE c.event_id = outbox.id)
                    AS finished
                """
            ),
            {"limit": limit, "retry": RELAY_RETRY_S},
        )
        return sorted(
            (DueEvent(r.id, r.topic, frozenset(r.finished)) for r in rows),
            key=lambda e: e.id.bytes,
        )


async def mark_dispatched(engine: AsyncEngine, event_ids: Collection[uuid.UUID]) -> None:
    """Mark events dispatched outright (events without a consumer: an audit trail)."""
    if not event_ids:
        return
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE outbox SET dispatched_at = now()"
                " WHERE id = ANY(CAST(:ids AS uuid[])) AND dispatched_at IS NULL"
            ),
            {"ids": list(event_ids)},
        )


async def process_delivery(
    engine: AsyncEngine,
    event_id: uuid.UUID,
    consumer: str,
    consumers: Mapping[str, Consumer],
    registry: Registry,
) -> str:
    """Run ``consumer``'s handler of one event and mark it done: ``done``, ``already``, ``missing``
    or ``not-routed``. Raises what the handler raises; KeyError for a routed pair without a
    handler."""
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT o.topic, o.payload, c.outcome FROM outbox o"
                    " LEFT JOIN outbox_consumers c ON c.event_id = o.id AND c.consumer = :c"
                    " WHERE o.id = :id"
                ),
                {"id": event_id, "c": consumer},
            )
        ).first()
    if row is None:
        return "missing"
    routed = registry.consumers_of_topic(row.topic)
    if consumer not in routed:
        return "not-routed"
    if row.outcome is None:
        event = registry.decode(row.topic, row.payload)
        await consumers[consumer][type(event)](event, event_id)
    async with engine.begin() as conn:
        await _finish(conn, event_id, consumer, "done", routed)
    return "done" if row.outcome is None else "already"


async def _finish(
    conn: AsyncConnection,
    event_id: uuid.UUID,
    consumer: str,
    outcome: str,
    routed: Collection[str],
) -> None:
    """Record ``consumer``'s ``outcome`` of the event and, if every routed consumer has
    one now, mark the event dispatched. The event's row lock serialises the consumers
    finishing at once, so the last one always sees the others' markers."""
    await conn.execute(text("SELECT 1 FROM outbox WHERE id = :id FOR UPDATE"), {"id": event_id})
    await conn.execute(
        text(
            "INSERT INTO outbox_consumers (event_id, consumer, outcome)"
            " SELECT id, :c, :outcome FROM outbox WHERE id = :id"
            " ON CONFLICT (event_id, consumer) DO NOTHING"
        ),
        {"id": event_id, "c": consumer, "outcome": outcome},
    )
    await _dispatch_if_complete(conn, event_id, routed)


async def finish_if_complete(
    engine: AsyncEngine, event_id: uuid.UUID, routed: Collection[str]
) -> None:
    """Mark the event dispatched if every routed consumer has finished (relay repair)."""
    async with engine.begin() as conn:
        await _dispatch_if_complete(conn, event_id, routed)


async def _dispatch_if_complete(
    conn: AsyncConnection, event_id: uuid.UUID, routed: Collection[str]
) -> None:
    """Mark the event dispatched once every consumer of ``routed`` has an outcome."""
    await conn.execute(
        text(
            "UPDATE outbox SET dispatched_at = now() WHERE id = :id AND dispatched_at IS NULL"
            " AND (SELECT count(*) FROM outbox_consumers"
            "      WHERE event_id = :id AND consumer = ANY(CAST(:routed AS text[]))) >= :n"
        ),
        {"id": event_id, "routed": list(routed), "n": len(routed)},
    )


async def dead_letter(
    engine: AsyncEngine,
    event_id: uuid.UUID,
    consumer: str,
    error: str,
    attempts: int,
    registry: Registry,
) -> str | None:
    """Record that ``consumer`` failed the event ``attempts`` times and stop re-driving
    that pair (the other consumers go on); return the event's topic (None if gone)."""
    async with engine.begin() as conn:
        topic: str | None = await conn.scalar(
            text(
                "INSERT INTO dead_letters (id, event_id, topic, consumer, error, attempts)"
                " SELECT :id, id, topic, :c, :error, :attempts FROM outbox WHERE id = :event"
                " RETURNING topic"
            ),
            {
                "id": new_id(),
                "event": event_id,
                "c": consumer,
                "error": error[:4000],
                "attempts": attempts,
            },
        )
        if topic is not None:
            routed = registry.consumers_of_topic(topic)
            await _finish(conn, event_id, consumer, "dead", routed)
    return topic


async def redrive_soon(engine: AsyncEngine, event_id: uuid.UUID, *, after_s: float = 1.0) -> None:
    """Make an undispatched event due again in ``after_s`` seconds (PostgreSQL or Redis was
    down)."""
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
    consumer: str | None = None  # None: a dead letter of before jobs per consumer


async def list_dead_letters(engine: AsyncEngine, *, limit: int = 100) -> list[DeadLetter]:
    """The dead letters not yet replayed, oldest first."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT id, event_id, topic, error, attempts, created_at, consumer"
                " FROM dead_letters WHERE replayed_at IS NULL ORDER BY created_at LIMIT :limit"
            ),
            {"limit": limit},
        )
        return [DeadLetter(*r) for r in rows]


async def replay_dead_letters(engine: AsyncEngine, ids: list[uuid.UUID] | None = None) -> int:
    """Re-drive dead letters (all, or ``ids``): the consumer loses its ``dead`` marker and the event
    is due now. Returns how many."""
    async with engine.begin() as conn:
        rows = (
            await conn.execute(
                text(
                    "UPDATE dead_letters SET replayed_at = now() WHERE replayed_at IS NULL"
                    + (" AND id = ANY(CAST(:ids AS uuid[]))" if ids else "")
                    + " RETURNING event_id, consumer"
                ),
                {"ids": ids} if ids else {},
            )
        ).all()
        events = list({r.event_id for r in rows})
        for r in rows:
            if r.consumer is not None:
                await conn.execute(
                    text(
                        "DELETE FROM outbox_consumers"
                        " WHERE event_id = :e AND consumer = :c AND outcome = 'dead'"
                    ),
                    {"e": r.event_id, "c": r.consumer},
                )
        if events:
            await conn.execute(
                text(
                    "UPDATE outbox SET dispatched_at = NULL, available_at = now()"
                    " WHERE id = ANY(CAST(:ids AS uuid[]))"
                ),
                {"ids": events},
            )
        return len(rows)


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
