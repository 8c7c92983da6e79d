"""The outbox consumer job and the relay that re-drives undispatched events.

``handle_outbox_event(ctx, event_id)`` runs the event's consumer (fan-out, feed
merges and removals); the job id is derived from the event id, so the post-commit
enqueue and the relay never run one event twice at once. Failures retry with
exponential backoff and jitter; after the last attempt the event becomes a dead letter
that ``roost dlq replay`` re-drives.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import uuid
from typing import Any

from arq import Retry

from app.throttle import ThrottledLog
from domain import metrics
from domain.outbox.process import claim_due_events, dead_letter, process_event, redrive_soon
from domain.unavailable import unavailable_dependency

log = logging.getLogger("roost.workers.events")
#: One line a minute while PostgreSQL or Redis is down, not one per job and poll.
_OUTAGE = ThrottledLog(log, every_s=60.0)

HANDLE_EVENT = "handle_outbox_event"
BACKOFF_FIRST_S = 0.2
BACKOFF_MAX_S = 3.0


def job_id(event_id: uuid.UUID | str) -> str:
    """The arq job id of an outbox event: one live job per event."""
    return f"outbox:{event_id}"


def backoff(attempt: int, rng: random.Random | None = None) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1-based): 0.2, 0.4, 0.8, 1.6,
    then 3.0 at most, each with ±20 % jitter so retries of many jobs spread out."""
    base = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (attempt - 1))
    return base * (rng or random).uniform(0.8, 1.2)


async def handle_outbox_event(ctx: dict[str, Any], event_id: str) -> str:
    """Run the consumer of one outbox event; retry, then dead-letter, on failure.

    A failure because PostgreSQL or Redis is down (domain/unavailable.py) is retried
    the same way but never dead-lettered: the event stays in the outbox, due again in a
    second, and the relay re-drives it once the server is back ("deferred").
    """
    attempt = ctx.get("job_try", 1)
    try:
        return await process_event(ctx["engine"], uuid.UUID(event_id), ctx["handlers"])
    except Exception as exc:
        down = unavailable_dependency(exc)
        if attempt < ctx["max_attempts"]:
            delay = backoff(attempt)
            if down is None:
                log.warning(
                    "event %s failed (attempt %d), retrying in %.2fs: %r",
                    event_id,
                    attempt,
                    delay,
                    exc,
                )
            else:
                _OUTAGE.warn("%s unavailable: events wait and retry (%r)", down, exc)
            raise Retry(defer=delay) from exc
        if down is not None:
            with contextlib.suppress(Exception):  # down too: the relay's due time holds
                await redrive_soon(ctx["engine"], uuid.UUID(event_id))
            _OUTAGE.warn("%s unavailable: event %s deferred to the relay", down, event_id)
            return "deferred"
        log.error("event %s failed %d times: dead letter", event_id, attempt, exc_info=True)
        topic = await dead_letter(ctx["engine"], uuid.UUID(event_id), repr(exc), attempt)
        metrics.current().dead_lettered(topic or "unknown")
        return "dead-letter"


async def relay_outbox(ctx: dict[str, Any]) -> int:
    """Enqueue every due, undispatched outbox event (crash recovery and events that
    were not dispatched after commit); return how many were enqueued."""
    events = await claim_due_events(ctx["engine"])
    for event in events:
        await ctx["redis"].enqueue_job(HANDLE_EVENT, str(event.id), _job_id=job_id(event.id))
    return len(events)


async def relay_forever(ctx: dict[str, Any], every: float = 1.0) -> None:
    """Run :func:`relay_outbox` every ``every`` seconds until cancelled (one per worker
    process; ``SKIP LOCKED`` lets several workers relay side by side). Errors are logged
    (an outage once a minute, without a traceback) and the loop goes on."""
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
