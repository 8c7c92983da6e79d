"""The outbox consumer job and the relay that re-drives undispatched events; job ids
come from the (event, consumer) pair, so a pair never runs twice at once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import uuid
from typing import Any

from arq import Retry

from adapters.unavailable import unavailable_dependency
from app.throttle import ThrottledLog
from domain import metrics
from domain.outbox.jobs import job_function, job_id, job_queue
from domain.outbox.process import (
    claim_due_events,
    dead_letter,
    finish_if_complete,
    mark_dispatched,
    process_delivery,
    redrive_soon,
)
from workers.deps import deps_of

log = logging.getLogger("roost.workers.events")
#: One line a minute while PostgreSQL or Redis is down, not one per job and poll.
_OUTAGE = ThrottledLog(log, every_s=60.0)

BACKOFF_FIRST_S = 0.2
BACKOFF_MAX_S = 3.0


def backoff(attempt: int, rng: random.Random | None = None) -> float:
    """Seconds after failed attempt ``attempt`` (1-based): 0.2 doubling to 3.0, ±20 %."""
    base = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (attempt - 1))
    return base * (rng or random).uniform(0.8, 1.2)


async def consume_outbox_event(ctx: dict[str, Any], event_id: str, consumer: str) -> str:
    """Run ``consumer`` on one outbox event; retry, then dead-letter the pair. A PostgreSQL or
    Redis outage is never dead-lettered: ``"deferred"``, due again in 1 s for the relay."""
    deps = deps_of(ctx)
    attempt = ctx.get("job_try", 1)
    event = uuid.UUID(event_id)
    try:
        return await process_delivery(deps.engine, event, consumer, deps.consumers, deps.registry)
    except Exception as exc:
        down = unavailable_dependency(exc)
        if attempt < deps.max_attempts:
            delay = backoff(attempt)
            if down is None:
                log.warning(
                    "event %s (%s) failed (attempt %d), retrying in %.2fs: %r",
                    event_id,
                    consumer,
                    attempt,
                    delay,
                    exc,
                )
            else:
                _OUTAGE.warn("%s unavailable: events wait and retry (%r)", down, exc)
            raise Retry(defer=delay) from exc
        if down is not None:
            with contextlib.suppress(Exception):  # down too: the relay's due time holds
                await redrive_soon(deps.engine, event)
            _OUTAGE.warn("%s unavailable: event %s deferred to the relay", down, event_id)
            return "deferred"
        log.error(
            "event %s (%s) failed %d times: dead letter", event_id, consumer, attempt, exc_info=True
        )
        topic = await dead_letter(deps.engine, event, consumer, repr(exc), attempt, deps.registry)
        metrics.current().dead_lettered(topic or "unknown")
        return "dead-letter"


async def relay_outbox(ctx: dict[str, Any]) -> int:
    """Enqueue each unfinished consumer of every due, undispatched event (events nobody
    consumes are marked dispatched); return how many jobs were enqueued."""
    deps = deps_of(ctx)
    events = await claim_due_events(deps.engine)
    nobody: list[uuid.UUID] = []
    enqueued = 0
    for event in events:
        routed = deps.registry.consumers_of_topic(event.topic)
        if not routed:
            nobody.append(event.id)
            continue
        todo = [c for c in routed if c not in event.finished]
        if not todo:  # every consumer finished: only the completion was lost
            await finish_if_complete(deps.engine, event.id, routed)
        for consumer in todo:
            await ctx["redis"].enqueue_job(
                job_function(consumer),
                str(event.id),
                consumer,
                _job_id=job_id(event.id, consumer),
                _queue_name=job_queue(consumer, ctx["redis"].default_queue_name),
            )
            enqueued += 1
    await mark_dispatched(deps.engine, nobody)
    return enqueued


async def relay_forever(ctx: dict[str, Any], every: float = 1.0) -> None:
    """Run :func:`relay_outbox` every ``every`` s until cancelled (``SKIP LOCKED``: workers
    relay side by side); errors are logged and the loop goes on."""
    while True:
        try:
            await relay_outbox(ctx)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            down = unavailable_dependency(exc)
            if down is None:
                log.warning("outbox relay failed; retrying", exc_info=True)
            else:
                _OUTAGE.warn("%s unavailable: the outbox relay waits (%r)", down, exc)
        await asyncio.sleep(every)
