"""Dispatching committed outbox events to the arq worker."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Sequence

from arq import ArqRedis, create_pool
from arq.connections import RedisSettings
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.outbox.jobs import job_function, job_id, job_queue
from domain.outbox.process import redrive_soon
from domain.outbox.registry import REGISTRY, Registry


class ArqDispatcher:
    """:class:`domain.outbox.dispatch.Dispatcher` on arq: one job per (event, consumer);
    with ``engine``, an event it cannot enqueue is made due at once for the relay."""

    def __init__(
        self,
        redis_url: str,
        queue_name: str,
        registry: Registry = REGISTRY,
        *,
        engine: AsyncEngine | None = None,
    ):
        self._registry = registry
        self._settings = RedisSettings.from_dsn(redis_url)
        self._queue_name = queue_name
        self._engine = engine
        self._pool: ArqRedis | None = None
        self._lock = asyncio.Lock()

    async def pool(self) -> ArqRedis:
        if self._pool is None:
            async with self._lock:
                if self._pool is None:
                    self._pool = await create_pool(
                        self._settings, default_queue_name=self._queue_name
                    )
        return self._pool

    @property
    def registry(self) -> Registry:
        """The event registry the unit of work resolves consumers from."""
        return self._registry

    async def enqueue(self, event_id: uuid.UUID, consumers: Sequence[str]) -> None:
        """Enqueue a job per consumer of ``event_id`` (each a no-op if already queued)."""
        try:
            pool = await self.pool()
            for consumer in consumers:
                await pool.enqueue_job(
                    job_function(consumer),
                    str(event_id),
                    consumer,
                    _job_id=job_id(event_id, consumer),
                    _queue_name=job_queue(consumer, self._queue_name),
                )
        except Exception:
            if self._engine is not None:
                with contextlib.suppress(Exception):  # PostgreSQL too: the usual wait holds
                    await redrive_soon(self._engine, event_id, after_s=0)
            raise

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = None
