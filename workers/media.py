"""The media pipeline's worker side (docs/api/media.md "Media")."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from arq import func
from arq.connections import RedisSettings
from arq.worker import Worker

from app.settings import Settings
from domain.media.cleanup_uploads import cleanup_uploads
from domain.outbox.jobs import CONSUME_MEDIA_EVENT, MEDIA_QUEUE_SUFFIX
from workers.deps import DEPS, deps_of
from workers.events import consume_outbox_event

log = logging.getLogger("roost.workers.media")


def media_worker(settings: Settings, ctx: dict[str, Any], redis_settings: RedisSettings) -> Worker:
    """An arq worker for ``<ARQ_QUEUE>:media`` sharing ``ctx``'s dependencies: MEDIA_WORKER_JOBS
    at once, each within MEDIA_JOB_TIMEOUT_S, retried and dead-lettered as outbox consumers."""
    return Worker(
        functions=[
            func(
                consume_outbox_event,
                name=CONSUME_MEDIA_EVENT,
                max_tries=settings.job_attempts,
                timeout=settings.media_job_timeout_s,
            )
        ],
        redis_settings=redis_settings,
        queue_name=settings.arq_queue + MEDIA_QUEUE_SUFFIX,
        ctx={DEPS: ctx[DEPS]},
        handle_signals=False,
        keep_result=0,
        max_jobs=settings.media_worker_jobs,
        job_timeout=settings.media_job_timeout_s,
        poll_delay=0.05,
    )


async def stop_media_worker(worker: Worker, task: asyncio.Task[None], within: float) -> None:
    """Stop picking media jobs, let the running ones finish (up to ``within`` s), close."""
    worker.allow_pick_jobs = False
    running = [t for t in worker.tasks.values() if not t.done()]
    if running:
        await asyncio.wait(running, timeout=within)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    with contextlib.suppress(Exception):
        await worker.close()


async def cleanup_uploads_job(ctx: dict[str, Any]) -> int:
    """Expire uploads unused past MEDIA_PENDING_TTL_S; return how many."""
    deps = deps_of(ctx)
    if deps.media is None:
        return 0
    done = await cleanup_uploads(deps.engine, deps.media.store, deps.settings.media_config)
    if done.expired or done.failed:
        log.info("uploads expired: %d (%d left for the next run)", done.expired, done.failed)
    return done.expired
