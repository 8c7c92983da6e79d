"""An API and a worker of a test's own with short cached feeds (FEED_MAX_LEN=20), so a
few dozen posts cross the window's end."""

from __future__ import annotations

import contextlib
import uuid

import httpx

from app.asgi import create_app
from tests.support.graphql import GQL
from tests.support.worker import WorkerControl


@contextlib.asynccontextmanager
async def small_feeds(settings, engine, worker: WorkerControl, **knobs):
    """A GraphQL client and a worker of their own with FEED_MAX_LEN=20 (and ``knobs``),
    on the run's Redis (its feed keys are of the test's fresh users) and a queue of
    their own; the session worker is stopped meanwhile, once it has consumed every event
    committed so far (a job left on its queue would wait for it: the own worker's relay
    cannot enqueue the same job id)."""
    await worker.drain()
    await worker.stop()
    small = settings.model_copy(
        update={"arq_queue": f"roost-test-small:{uuid.uuid4().hex[:8]}", "feed_max_len": 20} | knobs
    )
    control = WorkerControl(small, engine)
    await control.start()
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(small, engine=engine)),
            base_url="http://roost.test",
        ) as client:
            yield GQL(client), control
    finally:
        await control.stop()
        await worker.start()
