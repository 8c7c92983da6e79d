"""The queue's names for outbox work, shared by whoever enqueues (the API's dispatcher,
the relay) and the worker that runs it: one job per (event, consumer)."""

from __future__ import annotations

import uuid

#: The job function that runs one consumer of one event (workers/events.py).
CONSUME_EVENT = "consume_outbox_event"
#: The same, for the media consumer, on a queue of its own (``<queue>:media``) served by
#: a worker loop of its own: decoding and transcoding take far longer than any other
#: consumer's work (MEDIA_JOB_TIMEOUT_S), and arq re-runs a crashed worker's jobs only
#: after the longest time limit of their loop, so the other consumers keep their short
#: one (JOB_TIMEOUT_S).
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
    """The job id of ``consumer``'s run of an outbox event, ``outbox:<event id>:<consumer>``:
    one live job per pair, so the post-commit enqueue and the relay never run a pair twice
    at once."""
    return f"outbox:{event_id}:{consumer}"
