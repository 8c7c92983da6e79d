"""Handing committed outbox events to their consumers (the job queue, in production)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import Protocol

from domain.outbox.registry import Registry

log = logging.getLogger(__name__)

#: How long the relay waits before re-driving an event a use case dispatched itself.
REDRIVE_AFTER_S = 10


class Dispatcher(Protocol):
    """Enqueues the consumer jobs of committed outbox events, each deduplicated by its
    (event, consumer) job id. ``registry`` is the deployment's, which the unit of work
    asks once per event it records."""

    @property
    def registry(self) -> Registry: ...

    async def enqueue(self, event_id: uuid.UUID, consumers: Sequence[str]) -> None: ...


async def dispatch_after_commit(
    dispatcher: Dispatcher | None, event_id: uuid.UUID, topic: str, consumers: Sequence[str]
) -> None:
    """Enqueue ``consumers`` of the event right after the commit; never raises (the
    relay re-drives a failure after REDRIVE_AFTER_S)."""
    if dispatcher is None or not consumers:
        return
    try:
        await dispatcher.enqueue(event_id, consumers)
    except Exception:  # the relay is the safety net
        log.warning(
            "dispatch of %s %s failed; the relay will re-drive it", topic, event_id, exc_info=True
        )
