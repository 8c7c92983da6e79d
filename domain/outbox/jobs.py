"""The queue's names for outbox work, shared by whoever enqueues (the API's dispatcher,
the relay) and the worker that runs it: one job per (event, consumer)."""

from __future__ import annotations

import uuid

#: The job function that runs one consumer of one event (workers/events.py).
CONSUME_EVENT = "consume_outbox_event"


def job_id(event_id: uuid.UUID | str, consumer: str) -> str:
    """The job id of ``consumer``'s run of an outbox event, ``outbox:<event id>:<consumer>``:
    one live job per pair, so the post-commit enqueue and the relay never run a pair twice
    at once."""
    return f"outbox:{event_id}:{consumer}"
