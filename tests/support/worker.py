"""A real arq worker in the test's event loop, and waiting for it to finish the work.

Stopping never interrupts a job: the worker stops picking jobs, lets the running ones
finish, then closes. (A job cancelled midway would leave arq's in-progress key behind,
and its event would wait ~15 s for the key to expire, then up to the relay's 30 s retry:
a delay a later test's drain would see as a hang.)
"""

from __future__ import annotations

import asyncio

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.settings import Settings
from tests.support.polling import PATIENCE_S

#: Undispatched outbox events, with what the relay would do next with each.
_PENDING = text(
    "SELECT id, topic, available_at <= now() AS due FROM outbox"
    " WHERE dispatched_at IS NULL ORDER BY id"
)


async def _settled(worker, within: float) -> None:
    """Wait (up to ``within`` s) until ``worker``, no longer picking jobs, runs none: arq
    counts a job from its start (``job_counter``), and a poll that read the queue just
    before picking stopped may still start its jobs, so none may be counted across two
    poll delays."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while loop.time() < deadline:
        running = [t for t in worker.tasks.values() if not t.done()]
        if running:
            await asyncio.wait(running, timeout=max(0.0, deadline - loop.time()))
            continue
        idle = worker.job_counter == 0
        await asyncio.sleep(2 * worker.poll_delay_s)
        if idle and worker.job_counter == 0 and not worker.tasks:
            return


class WorkerControl:
    """A real arq worker running in this event loop, on this run's queue."""

    def __init__(self, settings: Settings, engine: AsyncEngine, *, relay: bool = True) -> None:
        self.settings = settings
        self.engine = engine
        self.relay = relay  # run the outbox relay (one worker per database is enough)
        self.worker = None
        self.task: asyncio.Task | None = None

    async def start(self) -> None:
        from arq.worker import Worker

        from workers.settings import worker_options

        if self.task is None:
            options = worker_options(self.settings, relay=self.relay)
            self.worker = Worker(**options, handle_signals=False)
            self.task = asyncio.create_task(self.worker.async_run())

    async def stop(self, *, within: float = PATIENCE_S) -> None:
        """Stop picking jobs, wait for the running ones (up to ``within`` s), close."""
        if self.task is None:
            return
        task, worker = self.task, self.worker
        self.task = self.worker = None  # stopped even if close() fails: start() works
        worker.allow_pick_jobs = False
        await _settled(worker, within)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        try:
            await worker.close()
        except asyncio.CancelledError:
            # arq's close() awaits the job tasks it was running, cancelled with the
            # worker; only a cancellation of this test's own task goes on.
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise

    async def pending(self) -> list[tuple[str, bool]]:
        """(topic, due now) of every outbox event not consumed yet."""
        async with self.engine.connect() as conn:
            return [(r.topic, r.due) for r in await conn.execute(_PENDING)]

    async def drain(self, within: float = PATIENCE_S) -> None:
        """Wait until every outbox event committed so far has been consumed.

        Events wait for the post-commit dispatch or for the relay (every second); the
        deadline only bounds a hang, and the error lists what was left (topic, due)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            async with self.engine.connect() as conn:
                pending = await conn.scalar(
                    text("SELECT count(*) FROM outbox WHERE dispatched_at IS NULL")
                )
            if pending == 0:
                return
            if loop.time() > deadline:
                left = await self.pending()
                raise AssertionError(f"outbox events still pending after {within:g} s: {left}")
            await asyncio.sleep(0.05)
