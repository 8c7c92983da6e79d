"""The fault schedule and its runner: each fault is done, undone after its outage, and
timed until the system is whole again (a probe post acknowledged and fanned out)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from dataclasses import dataclass, field

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tools.soak.record import Recorder, call, now, pk
from tools.soak.servers import Stack
from tools.soak.users import CREATE
from tools.soak.world import Account, World

WORKER = "worker SIGKILL"
API = "API process SIGKILL"
POSTGRES = "PostgreSQL stop -m immediate"
REDIS = "Redis restart + flush"
KINDS = (WORKER, API, POSTGRES, REDIS)

#: Seconds the system gets to recover from a fault before the soak calls it stuck.
RECOVERY_LIMIT_S = 120.0
#: Failures this long after a recovery still count toward its fault (answers in flight).
GRACE_S = 2.0

_FANNED_OUT = text(
    "SELECT count(*) FROM outbox o JOIN outbox_consumers c ON c.event_id = o.id"
    " WHERE o.topic = 'post.created' AND o.payload->>'post_id' = :p"
    " AND c.consumer = 'feed' AND c.outcome = 'done'"
)


@dataclass
class Fault:
    kind: str
    planned: float  # seconds after the load started
    started: float = 0.0  # monotonic
    restored: float = 0.0  # the server back / the process started again
    answered: float | None = None  # a probe post acknowledged
    recovered: float | None = None  # ... and fanned out by the worker
    note: str = ""

    def window(self) -> tuple[float, float]:
        """When requests may fail because of it."""
        end = self.recovered if self.recovered is not None else self.restored + RECOVERY_LIMIT_S
        return self.started, end + GRACE_S


@dataclass
class Schedule:
    """``each`` faults of every kind, round robin, evenly spread over ``seconds`` after
    ``warm_up`` (the last one a quarter of the gap before the end)."""

    seconds: float
    each: int
    warm_up: float
    outage_s: float = 4.0
    cutoff: float | None = None  # no fault starts later than this (s after the start)
    faults: list[Fault] = field(default_factory=list)

    def __post_init__(self) -> None:
        kinds = [k for _ in range(self.each) for k in KINDS]
        span = max(self.seconds - self.warm_up, 1.0)
        gap = span / max(len(kinds), 1)
        self.faults = [Fault(k, self.warm_up + i * gap) for i, k in enumerate(kinds)]


async def run_schedule(
    schedule: Schedule,
    stack: Stack,
    engine: AsyncEngine,
    world: World,
    probe: Account,
    started: float,
    rec: Recorder,
) -> None:
    """Do every fault of the schedule at its time (or once the previous one recovered);
    one that would start past ``schedule.cutoff`` s is not run (``started`` stays 0)."""
    async with httpx.AsyncClient(base_url=stack.base_url, timeout=30) as http:
        previous_end = started
        for fault in schedule.faults:
            at = max(started + fault.planned, previous_end + GRACE_S)
            if schedule.cutoff is not None and at >= started + schedule.cutoff:
                return
            await asyncio.sleep(max(0.0, at - now()))
            await _inject(fault, stack, schedule.outage_s)
            await _recover(fault, http, engine, world, probe, rec)
            previous_end = fault.recovered if fault.recovered is not None else now()


async def _inject(fault: Fault, stack: Stack, outage_s: float) -> None:
    fault.started = now()
    if fault.kind == WORKER:
        await asyncio.to_thread(stack.kill_worker)
        await asyncio.sleep(outage_s / 2)  # a supervisor's restart delay
        await asyncio.to_thread(stack.start_worker)
    elif fault.kind == API:
        await asyncio.to_thread(stack.kill_api_process)
    elif fault.kind == POSTGRES:
        await asyncio.to_thread(stack.crash_postgres)
        await asyncio.sleep(outage_s)
        await asyncio.to_thread(stack.recover_postgres)
    elif fault.kind == REDIS:
        await asyncio.to_thread(stack.redis.flush_and_kill)
        await asyncio.sleep(outage_s)
        await asyncio.to_thread(stack.redis.start)
    fault.restored = now()


async def _recover(
    fault: Fault,
    http: httpx.AsyncClient,
    engine: AsyncEngine,
    world: World,
    probe: Account,
    rec: Recorder,
) -> None:
    """Set when a post made after the fault was undone was acknowledged (``answered``)
    and fanned out by the worker (``recovered``), unless RECOVERY_LIMIT_S pass first.
    The probe's requests are recorded (op ``probe``)."""
    deadline = fault.restored + RECOVERY_LIMIT_S
    while now() < deadline:
        caption = f"probe {uuid.uuid4().hex[:8]}"
        data = await call(http, rec, "probe", CREATE, {"c": caption}, probe.token)
        post = ((data or {}).get("createPost") or {}).get("post")
        if post is None:
            await asyncio.sleep(0.25)
            continue
        fault.answered = now()
        world.posts[post["id"]] = (probe.index, True)
        post_id = str(pk(post["id"]))
        while now() < deadline:
            with contextlib.suppress(Exception):  # PostgreSQL may still be coming back
                async with engine.connect() as conn:
                    if await conn.scalar(_FANNED_OUT, {"p": post_id}):
                        fault.recovered = now()
                        return
            await asyncio.sleep(0.1)
