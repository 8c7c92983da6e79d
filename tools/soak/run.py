"""One soak: start the system, run the users and the fault schedule, audit, report."""

from __future__ import annotations

import asyncio
import re
import shutil
import tempfile
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from tools.soak import audit
from tools.soak.faults import Fault, Schedule, run_schedule
from tools.soak.record import Recorder, now
from tools.soak.resources import back_to_baseline, snapshot
from tools.soak.servers import Stack
from tools.soak.users import Load, VirtualUser, client, sign_up, subscriber
from tools.soak.world import World


@dataclass
class Config:
    seconds: float = 360.0  # of load, faults included
    users: int = 40
    subscribers: int = 10  # of the users, also holding a feedItemAdded subscription
    each: int = 3  # faults of every kind
    outage_s: float = 4.0
    think_s: float = 1.0
    warm_up: float = 20.0
    api_workers: int = 2
    #: No fault starts later than this after the load started (None: every fault runs,
    #: each after the previous recovered, however long that takes).
    cutoff: float | None = None
    folder: Path | None = None  # scratch folder (default: a new temporary one, deleted)


@dataclass
class Report:
    faults: list[Fault]
    checks: list[audit.Check]
    rec: Recorder
    started: float
    ended: float
    folder: Path
    log_errors: dict[str, Counter[str]] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def text(self) -> str:
        lines = [f"soak: {self.ended - self.started:.0f} s of load, files in {self.folder}", ""]
        lines += [*self.fault_table(), "", *self.traffic(), *self.samples(), "", "audit:"]
        for c in self.checks:
            lines.append(f"  [{'ok' if c.passed else 'FAIL'}] {c.name}: {c.detail}")
        for name, errors in self.log_errors.items():
            total = sum(errors.values())
            lines.append(f"  {name}.log: {total} ERROR line(s) or traceback(s)")
            lines += [f"    x{n} {e}" for e, n in errors.most_common(6)]
        lines.append(f"\nsoak {'PASSED' if self.passed else 'FAILED'}")
        return "\n".join(lines)

    def fault_table(self) -> list[str]:
        head = (
            f"{'#':>2}  {'fault':<29} {'at s':>6} {'down s':>7} {'API s':>6} {'fan-out s':>9}"
            "  failed requests (codes)"
        )
        out = [head, "-" * len(head)]
        failed: dict[int, Counter[str]] = {}
        for o in self.rec.outcomes:
            if o.ok or o.op == "subscription":
                continue
            during = [
                i for i, f in enumerate(self.faults)
                if f.started and f.window()[0] <= o.ended and o.started <= f.window()[1]
            ]  # fmt: skip
            if during:  # the latest fault it overlaps
                failed.setdefault(during[-1], Counter())[o.code] += 1
        for i, f in enumerate(self.faults):
            if not f.started:
                out.append(f"{i + 1:>2}  {f.kind:<29} not run")
                continue
            api = f"{f.answered - f.restored:.1f}" if f.answered else "NEVER"
            fan_out = f"{f.recovered - f.restored:.1f}" if f.recovered else "NEVER"
            codes = failed.get(i, Counter())
            said = ", ".join(f"{n} {c}" for c, n in codes.most_common()) or "none"
            out.append(
                f"{i + 1:>2}  {f.kind:<29} {f.started - self.started:>6.1f}"
                f" {f.restored - f.started:>7.1f} {api:>6} {fan_out:>9}  {said}"
            )
        out.append("(down: from the fault until the server is back or the process restarted;")
        out.append(" API, fan-out: from then until a new post is acknowledged, and fanned out")
        out.append(" by the worker, which includes the backlog the outage left)")
        return out

    def samples(self) -> list[str]:
        """The first body of each kind of failure but the documented 503."""
        kinds = Counter((o.op, o.code) for o in self.rec.outcomes if not o.ok)
        out = [
            f"  {op} {code} x{n}: {self.rec.samples.get((op, code), '')[:300]}"
            for (op, code), n in kinds.most_common()
            if code != "503 SERVICE_UNAVAILABLE"
        ]
        return ["", "failures but 503 SERVICE_UNAVAILABLE, with the first answer of each:", *out]

    def traffic(self) -> list[str]:
        ops: dict[str, Counter[str]] = {}
        for o in self.rec.outcomes:
            ops.setdefault(o.op, Counter())["ok" if o.ok else "failed"] += 1
        span = max(self.ended - self.started, 1.0)
        n = sum(sum(c.values()) for c in ops.values())
        out = [f"requests: {n} ({n / span:.0f}/s)"]
        for op, c in sorted(ops.items(), key=lambda kv: -sum(kv[1].values())):
            out.append(f"  {op:<14} {c['ok']:>6} ok {c['failed']:>5} failed")
        return out


def _engine(database_url: str) -> AsyncEngine:
    url = database_url.replace("postgresql://", "postgresql+asyncpg://", 1)
    return create_async_engine(url, pool_size=2, max_overflow=2, pool_pre_ping=True)


async def soak(cfg: Config) -> Report:
    """Run one soak as configured; the report (``passed`` when every check passed)."""
    own = cfg.folder is None
    folder = Path(tempfile.mkdtemp(prefix="roost-soak-")) if cfg.folder is None else cfg.folder
    folder.mkdir(parents=True, exist_ok=True)
    stack = Stack(folder, api_workers=cfg.api_workers)
    try:
        await asyncio.to_thread(stack.start)
        engine = _engine(stack.database_url)
        try:
            report = await _soak(cfg, stack, engine, folder)
        finally:
            await engine.dispose()
    finally:
        unstopped = await asyncio.to_thread(stack.stop)
    report.checks.append(
        audit.Check(
            "everything stopped",
            not unstopped,
            "; ".join(unstopped) or "API, worker, Redis and PostgreSQL",
        )
    )
    if own and report.passed:
        shutil.rmtree(folder, ignore_errors=True)
    return report


async def _soak(cfg: Config, stack: Stack, engine: AsyncEngine, folder: Path) -> Report:
    rec, world, load = Recorder(), World(), Load(cfg.think_s)
    run = uuid.uuid4().hex[:6]
    clients = [client(stack.base_url) for _ in range(cfg.users + 1)]
    stop = asyncio.Event()
    try:
        probe = await sign_up(clients[0], rec, world, f"probe_{run}")
        accounts = [
            await sign_up(clients[i + 1], rec, world, f"vu{i}_{run}") for i in range(cfg.users)
        ]
        users = [VirtualUser(a, world, rec, clients[i + 1], load) for i, a in enumerate(accounts)]
        started = now()
        ws_url = stack.base_url.replace("http", "ws", 1) + "/graphql"
        tasks = [asyncio.create_task(u.run(stop)) for u in users]
        subs = [
            asyncio.create_task(subscriber(ws_url, a, rec, stop))
            for a in accounts[: cfg.subscribers]
        ]
        schedule = Schedule(cfg.seconds, cfg.each, cfg.warm_up, cfg.outage_s, cfg.cutoff)
        await asyncio.sleep(cfg.warm_up * 0.8)
        before = await snapshot(stack, engine)
        await run_schedule(schedule, stack, engine, world, probe, started, rec)
        await asyncio.sleep(max(0.0, started + cfg.seconds - now()))
        stop.set()
        await asyncio.gather(*tasks)
        events = sum(await asyncio.gather(*subs))
        ended = now()
    finally:
        stop.set()
        for c in clients:
            await c.aclose()
    checks = [await audit.outbox_drained(engine, 180.0)]
    run_ = [f for f in schedule.faults if f.started]
    checks.append(
        audit.Check(
            "every fault run and recovered",
            len(run_) == len(schedule.faults) and all(f.recovered for f in run_),
            f"{len(run_)} of {len(schedule.faults)} run"
            + (" (the others past the cut-off)" if len(run_) < len(schedule.faults) else "")
            + f", {sum(1 for f in run_ if f.recovered)} recovered",
        )
    )
    checks.append(await audit.acknowledged_writes(engine, world))
    checks.append(await audit.applied_once(engine, world))
    checks.append(await audit.counts_verify(stack))
    checks.append(await audit.feeds(stack, engine, world, rec))
    checks.append(await audit.dead_letters(engine, schedule.faults))
    checks += audit.answers(rec, schedule.faults)
    checks.append(audit.subscriptions(rec, events))
    await asyncio.sleep(3.0)  # idle: pools settle, closed sockets go
    checks.append(back_to_baseline(before, await snapshot(stack, engine)))
    errors = {name: _errors(stack.log_text(name)) for name in ("api", "worker")}
    return Report(schedule.faults, checks, rec, started, ended, folder, errors)


def _errors(log: str) -> Counter[str]:
    """The ERROR lines of a log and the message before each traceback, by message (ids
    and numbers folded)."""
    out: Counter[str] = Counter()
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if " ERROR " in line or line.startswith("ERROR"):
            message = line.split("ERROR", 1)[1].strip()
        elif line.startswith("Traceback") and i and lines[i - 1].strip():  # not chained
            message = "(traceback) " + lines[i - 1]
        else:
            continue
        out[re.sub(r"[0-9a-f-]{8,}|\d+", "N", message)[:160]] += 1
    return out
