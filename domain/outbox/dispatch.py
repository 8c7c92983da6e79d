"""Handing committed outbox events to their consumers (the job queue, in production)."""

from __future__ import annotations

import logging
import uuid
from typing import Protocol

log = logging.getLogger(__name__)

#: How long the relay waits before re-driving an event a use case dispatched itself.
REDRIVE_AFTER_S = 10


class Dispatcher(Protocol):
    """Enqueues the consumer jobs of one committed outbox event (one per consumer of its
    type: domain.outbox.registry), each deduplicated by its (event, consumer) job id."""

    async def dispatch(self, event_id: uuid.UUID, topic: str) -> None: ...


async def dispatch_after_commit(
    dispatcher: Dispatcher | None, event_id: uuid.UUID, topic: str
) -> None:
    """Dispatch right after the commit; never raises (the relay re-drives a failure
    after REDRIVE_AFTER_S)."""
    if dispatcher is None:
        return
    try:
        await dispatcher.dispatch(event_id, topic)
    except Exception:  # the relay is the safety net
        log.warning(
            "dispatch of %s %s failed; the relay will re-drive it", topic, event_id, exc_info=True
        )
