"""Queue names for outbox work, shared by the enqueuers and the worker: one job per (event,
consumer)."""

from __future__ import annotations

import uuid

#: The job function that runs one consumer of one event (workers/events.py).
CONSUME_EVENT = "consume_outbox_event"
#: The media consumer's, on its own queue and worker loop: arq re-runs a crashed job only after
#: its loop's longest timeout (MEDIA_JOB_TIMEOUT_S); the others keep JOB_TIMEOUT_S.
CONSUME_MEDIA_EVENT = "consume_media_event"
MEDIA_QUEUE_SUFFIX = ":media"
_MEDIA = "media"


def job_function(consumer: str) -> str:
    """The job function that runs ``consumer``'s jobs."""
    return CONSUME_MEDIA_EVENT if consumer == _MEDIA else CONSUME_EVENT


def job_queue(consumer: str, queue: str) -> str:
    """The queue of ``consumer``'s jobs, given the deployment's queue (ARQ_QUEUE)."""
    return queue + MEDIA_QUEUE_SUFFIX if consumer == _MEDIA else queue


def job_id(event_id: uuid.UUID | str, consumer: str) -> str:
    """``outbox:<event id>:<consumer>``: one live job per pair, so the post-commit enqueue and the
    relay never run a pair twice at once."""
    return f"outbox:{event_id}:{consumer}"
