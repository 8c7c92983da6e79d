"""Dispatching committed outbox events to the arq worker."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

from arq import ArqRedis, create_pool
from arq.connections import RedisSettings
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.outbox.process import redrive_soon
from workers.events import HANDLE_EVENT, job_id


class ArqDispatcher:
    """Implements :class:`domain.outbox.dispatch.Dispatcher` with an arq pool (created on
    first use) that enqueues ``handle_outbox_event`` under the event's job id.

    With ``engine``, an event it cannot enqueue (Redis down) is made due at once for the
    worker's relay, which enqueues it within a second of Redis coming back (instead of
    after the relay's usual wait for events dispatched after commit)."""

    def __init__(self, redis_url: str, queue_name: str, *, engine: AsyncEngine | None = None):
        self._settings = RedisSettings.from_dsn(redis_url)
        self._queue_name = queue_name
        self._engine = engine
        self._pool: ArqRedis | None = None
        self._lock = asyncio.Lock()

    async def pool(self) -> ArqRedis:
        """The arq connection pool."""
        if self._pool is None:
            async with self._lock:
                if self._pool is None:
                    self._pool = await create_pool(
                        self._settings, default_queue_name=self._queue_name
                    )
        return self._pool

    async def dispatch(self, event_id: uuid.UUID, topic: str) -> None:
        """Enqueue the consumer job of ``event_id`` (a no-op if it is already queued)."""
        try:
            pool = await self.pool()
            await pool.enqueue_job(HANDLE_EVENT, str(event_id), _job_id=job_id(event_id))
        except Exception:
            if self._engine is not None:
                with contextlib.suppress(Exception):  # PostgreSQL too: the usual wait holds
                    await redrive_soon(self._engine, event_id, after_s=0)
            raise

    async def close(self) -> None:
        """Close the pool."""
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = None
