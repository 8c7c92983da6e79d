"""The worker's liveness: each ``roost worker`` writes a heartbeat every
WORKER_HEARTBEAT_S seconds into ``<ARQ_QUEUE>:heartbeats`` (member WORKER_NAME, score the
Unix time), read by ``roost worker --check``, ``/readyz`` and ``roost run``. A blocked
loop or a dead relay stops the beats; the check fails past WORKER_HEARTBEAT_MAX_AGE_S.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

log = logging.getLogger("roost.workers.heartbeat")

#: Members not heard from for this long are dropped from the set (seconds).
FORGET_AFTER_S = 86_400.0


def heartbeat_key(queue: str) -> str:
    return f"{queue}:heartbeats"


async def beat(redis: Redis, queue: str, name: str, now: float | None = None) -> None:
    """Record that worker ``name`` of ``queue`` is alive at ``now`` (default: the time)."""
    now = time.time() if now is None else now
    key = heartbeat_key(queue)
    async with redis.pipeline(transaction=False) as pipe:
        pipe.zadd(key, {name: now})
        pipe.zremrangebyscore(key, "-inf", now - FORGET_AFTER_S)
        await pipe.execute()


async def heartbeat_forever(
    redis: Redis,
    queue: str,
    name: str,
    every_s: float,
    alive: Callable[[], bool] = lambda: True,
) -> None:
    """Beat every ``every_s`` seconds while ``alive()`` holds; a Redis error is logged."""
    while True:
        if alive():
            try:
                await beat(redis, queue, name)
            except Exception as exc:  # Redis restarting: the next beat will tell
                log.warning("worker heartbeat not written: %r", exc)
        await asyncio.sleep(every_s)


@dataclass(frozen=True)
class Liveness:
    """The newest beat of a worker (``name``), or of any worker (``name`` None)."""

    ok: bool
    message: str


async def liveness(redis: Redis, queue: str, max_age_s: float, name: str | None = None) -> Liveness:
    """Whether worker ``name`` (None: any worker of ``queue``) beat within ``max_age_s``;
    ``message`` says how long ago, or that none did."""
    key = heartbeat_key(queue)
    now = time.time()
    if name is not None:
        score = await redis.zscore(key, name)
        who = f"worker {name!r}"
    else:
        newest: list[Any] = await redis.zrevrange(key, 0, 0, withscores=True)
        score = newest[0][1] if newest else None
        alive = await redis.zcount(key, now - max_age_s, "+inf")
        who = f"{alive} worker(s) alive, newest"
    if score is None:
        return Liveness(False, f"no heartbeat of {who if name else 'any worker'} on {queue!r}")
    age = max(now - float(score), 0.0)
    if age > max_age_s:
        return Liveness(False, f"{who}: last heartbeat {age:.0f} s ago (> {max_age_s:g} s)")
    return Liveness(True, f"{who}: heartbeat {age:.1f} s ago")
