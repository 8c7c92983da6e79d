"""Hot-account follow benchmark: N concurrent clients follow ONE account.

Every follow goes through the real use case,
``domain.social.follow_user.follow_user(engine, follower, followee, counter_shards=K)``,
on a real PostgreSQL. Two variants run in the same process, interleaved round by round
(baseline, sharded, baseline, sharded, ...), each round on a fresh followee:

- ``baseline``: ``counter_shards=1`` -- every follow adds to the one counter row of the
  followee (the hot row);
- ``sharded``: ``counter_shards=K`` (16 by default, the ``COUNTER_SHARDS`` default).

The code path is identical; only the number of shard rows differs. After each variant
the followee's follower count (``domain.social.queries.follow_counts``) must equal the
number of follows performed and ``verify_follow_counts`` must report zero drift.

Usage::

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
        python -m bench.follow_hot [--clients 16] [--follows 4000] [--shards 16] [--rounds 3]

DATABASE_URL names a *server*: a throwaway database ``roost_bench_<random>`` is
created on it, migrated, and dropped (``WITH (FORCE)``) at the end. Without
DATABASE_URL the embedded PostgreSQL of ``app.embedded`` is started in a temporary
folder, with its durability settings put back to PostgreSQL's defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from app.database import create_engine
from bench._support import (
    bench_output,
    exit_with,
    postgres_server,
    record_table,
    throwaway_database,
)
from domain.db import new_id
from domain.social.follow_user import follow_user
from domain.social.queries import follow_counts
from domain.social.verify_counts import verify_follow_counts

GOAL_RATIO = 3.0

# --------------------------------------------------------------------------- database


_INSERT_USERS = text(
    """
    INSERT INTO users (id, username, display_name, password_hash)
    SELECT id, name, name, 'bench-not-a-hash'
    FROM unnest(CAST(:ids AS uuid[]), CAST(:names AS text[])) AS t(id, name)
    """
)


async def make_users(engine: AsyncEngine, n: int, prefix: str = "b") -> list[uuid.UUID]:
    """Insert ``n`` active users in one statement and return their ids."""
    ids = [new_id() for _ in range(n)]
    names = [f"{prefix}{u.hex[-20:]}" for u in ids]
    async with engine.begin() as conn:
        await conn.execute(_INSERT_USERS, {"ids": ids, "names": names})
    return ids


# -------------------------------------------------------------------------- measuring


@dataclass
class Result:
    """One timed run of one variant."""

    variant: str
    shards: int
    clients: int
    follows: int
    seconds: float
    latencies: list[float]
    exact: bool
    cpu_seconds: float = 0.0
    server_cpu_seconds: float | None = None
    machine_busy: float | None = None
    waits: Counter[str] = field(default_factory=Counter)

    @property
    def rate(self) -> float:
        """Follows per second over the whole run (wall clock)."""
        return self.follows / self.seconds

    def latency_ms(self, q: float) -> float:
        """The ``q`` quantile (0..1) of one follow's latency, in milliseconds."""
        ordered = sorted(self.latencies)
        return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _backend_cpu(pids: Sequence[int], database: str) -> float | None:
    """CPU seconds (user + system) used so far by the server processes ``pids``, read
    from /proc; None when they are not local processes serving ``database``."""
    total = 0
    for pid in pids:
        try:
            if database not in Path(f"/proc/{pid}/cmdline").read_text(errors="replace"):
                return None
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / _CLK_TCK


def _machine_ticks() -> tuple[int, int] | None:
    """(busy, total) CPU ticks of the whole machine since boot, from /proc/stat."""
    try:
        line = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    ticks = [int(x) for x in line[1:9]]  # user nice system idle iowait irq softirq steal
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)


async def _sample_waits(url: str, stop: asyncio.Event, waits: Counter[str]) -> None:
    """Every ~5 ms, count what each session of the bench database is doing (pg_stat_activity
    wait event, or CPU when active without one, or ClientRead when idle in transaction)."""
    import asyncpg

    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    conn = await asyncpg.connect(dsn)
    try:
        while not stop.is_set():
            rows = await conn.fetch(
                "SELECT state, wait_event_type, wait_event FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                " AND backend_type = 'client backend'"
            )
            for r in rows:
                if r["state"] == "idle":
                    waits["idle (outside a transaction)"] += 1
                elif r["wait_event"]:
                    waits[f"{r['wait_event_type']}:{r['wait_event']}"] += 1
                else:
                    waits["running (CPU)"] += 1
            await asyncio.sleep(0.005)
    finally:
        await conn.close()


async def run_variant(
    engine: AsyncEngine,
    *,
    variant: str,
    shards: int,
    followee: uuid.UUID,
    followers: Sequence[uuid.UUID],
    clients: int,
    sample_url: str | None = None,
) -> Result:
    """Have ``clients`` concurrent tasks make every one of ``followers`` follow ``followee``
    through ``follow_user(..., counter_shards=shards)``; time it, then check the counts.

    ``exact`` is True when the followee's follower count equals ``len(followers)`` and
    ``verify_follow_counts`` finds zero drift in the whole database.
    """
    todo = iter(followers)
    latencies: list[float] = []
    created = 0

    async def client() -> None:
        nonlocal created
        for follower in todo:  # a shared iterator: each follower is taken exactly once
            t = time.perf_counter()
            outcome = await follow_user(engine, follower, followee, counter_shards=shards)
            latencies.append(time.perf_counter() - t)
            created += outcome.created

    async with engine.connect() as conn:
        database = await conn.scalar(text("SELECT current_database()"))
        pids = list(
            await conn.scalars(
                text(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                    " AND backend_type = 'client backend'"
                )
            )
        )
    waits: Counter[str] = Counter()
    stop = asyncio.Event()
    sampler = asyncio.create_task(_sample_waits(sample_url, stop, waits)) if sample_url else None
    server0, machine0 = _backend_cpu(pids, database), _machine_ticks()
    t0, cpu0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(client() for _ in range(clients)))
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    server1, machine1 = _backend_cpu(pids, database), _machine_ticks()
    if sampler:
        stop.set()
        await sampler
    server_cpu = server1 - server0 if server0 is not None and server1 is not None else None
    busy = None
    if machine0 and machine1 and machine1[1] > machine0[1]:
        busy = (machine1[0] - machine0[0]) / (machine1[1] - machine0[1])

    async with engine.connect() as conn:
        followers_count, following_count = (await follow_counts(conn, [followee]))[followee]
    report = await verify_follow_counts(engine)
    exact = (
        created == len(followers)
        and followers_count == len(followers)
        and following_count == 0
        and not report.drift
    )
    return Result(
        variant,
        shards,
        clients,
        len(followers),
        seconds,
        latencies,
        exact,
        cpu_seconds=cpu,
        server_cpu_seconds=server_cpu,
        machine_busy=busy,
        waits=waits,
    )


# ----------------------------------------------------------------------------- report


def _row(cells: Sequence[object]) -> str:
    widths = (9, 7, 7, 8, 9, 8, 8, 6)
    return "  ".join(
        str(c).ljust(w) if i == 0 else str(c).rjust(w)
        for i, (c, w) in enumerate(zip(cells, widths, strict=True))
    )


def print_table(results: Sequence[Result]) -> None:
    """Print one line per run: variant, clients, follows, seconds, follows/s, latency, exact?"""
    record_table(
        ("run", "follows/s", "p50 ms", "p99 ms"),
        [
            (r.variant, f"{r.rate:.0f}", f"{r.latency_ms(0.5):.2f}", f"{r.latency_ms(0.99):.2f}")
            for r in results
        ],
    )
    print(
        _row(
            ("variant", "clients", "follows", "seconds", "follows/s", "p50 ms", "p99 ms", "exact?")
        )
    )
    for r in results:
        print(
            _row(
                (
                    f"{r.variant}",
                    r.clients,
                    r.follows,
                    f"{r.seconds:.3f}",
                    f"{r.rate:.0f}",
                    f"{r.latency_ms(0.5):.2f}",
                    f"{r.latency_ms(0.99):.2f}",
                    "yes" if r.exact else "NO",
                )
            )
        )


def median_rate(results: Sequence[Result], variant: str) -> float:
    """Median follows/s over the rounds of ``variant``."""
    return statistics.median(r.rate for r in results if r.variant == variant)


def print_diagnostics(results: Sequence[Result]) -> None:
    """Per variant (all rounds): CPU per follow of this process (the clients) and of the
    server backends (when local), how busy the whole machine was, and the share of
    sampled session time per wait event (with --waits)."""
    for variant in ("baseline", "sharded"):
        runs = [r for r in results if r.variant == variant]
        follows = sum(r.follows for r in runs)
        cpu, wall = sum(r.cpu_seconds for r in runs), sum(r.seconds for r in runs)
        line = (
            f"cpu    {variant}: client {1000 * cpu / follows:.2f} ms/follow"
            f" ({100 * cpu / wall:.0f}% of a core)"
        )
        if all(r.server_cpu_seconds is not None for r in runs):
            server = sum(r.server_cpu_seconds or 0.0 for r in runs)
            line += (
                f", server backends {1000 * server / follows:.2f} ms/follow"
                f" ({100 * server / wall:.0f}% of a core)"
            )
        if all(r.machine_busy is not None for r in runs):
            busy = sum((r.machine_busy or 0.0) * r.seconds for r in runs) / wall
            line += f", machine {100 * busy:.0f}% busy of {os.cpu_count()} CPUs"
        print(line)
        total: Counter[str] = Counter()
        for r in runs:
            total.update(r.waits)
        n = sum(total.values())
        if n:
            top = ", ".join(f"{k} {100 * v / n:.0f}%" for k, v in total.most_common(6))
            print(f"waits  {variant}: {top}")


# ------------------------------------------------------------------------------- main


async def bench(url: str, args: argparse.Namespace) -> int:
    """Warm up, run the interleaved rounds, print the table and the ratio; return the
    exit code (1 when a count was not exact)."""
    engine = create_engine(url, pool_size=args.clients + 2, max_overflow=4)
    try:
        async with engine.connect() as conn:
            info = (
                await conn.execute(
                    text(
                        "SELECT current_setting('server_version'), current_setting('fsync'),"
                        " current_setting('synchronous_commit')"
                    )
                )
            ).one()
        per_run = args.follows
        warm = max(args.clients * 20, 200)
        n_users = 2 * args.rounds * (per_run + 1) + 2 * (warm + 1)
        ids = await make_users(engine, n_users)
        async with engine.begin() as conn:
            await conn.execute(text("ANALYZE users"))
        pool = iter(ids)

        def take(n: int) -> list[uuid.UUID]:
            return [next(pool) for _ in range(n)]

        print(
            f"PostgreSQL {info[0]} (fsync={info[1]}, synchronous_commit={info[2]}), "
            f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, loop={args.loop},"
            f" pool={args.clients + 2}"
        )

        # Warm-up: fill the pool, the prepared-statement caches and the buffers.
        for shards in (1, args.shards):
            w = await run_variant(
                engine,
                variant="warm-up",
                shards=shards,
                followee=take(1)[0],
                followers=take(warm),
                clients=args.clients,
            )
            if not w.exact:
                print("warm-up counts are NOT exact", file=sys.stderr)
                return 1

        sample_url = url if args.waits else None
        results: list[Result] = []
        for _ in range(args.rounds):
            for variant, shards in (("baseline", 1), ("sharded", args.shards)):
                results.append(
                    await run_variant(
                        engine,
                        variant=variant,
                        shards=shards,
                        followee=take(1)[0],
                        followers=take(per_run),
                        clients=args.clients,
                        sample_url=sample_url,
                    )
                )

        print_table(results)
        base, shard = median_rate(results, "baseline"), median_rate(results, "sharded")
        print(f"median follows/s: baseline (K=1) {base:.0f}, sharded (K={args.shards}) {shard:.0f}")
        ratio = shard / base
        verdict = "met" if ratio >= GOAL_RATIO else "NOT met"
        print(f"ratio sharded/baseline = {ratio:.2f}x (goal >= {GOAL_RATIO:.0f}x: {verdict})")
        print_diagnostics(results)
        if not all(r.exact for r in results):
            print("counts are NOT exact", file=sys.stderr)
            return 1
        return 0
    finally:
        await engine.dispose()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line (see the module docstring)."""
    p = argparse.ArgumentParser(
        prog="python -m bench.follow_hot",
        description="N concurrent clients follow one account: sharded counter vs one row.",
        epilog="DATABASE_URL names a PostgreSQL server (a throwaway database is created "
        "on it); unset, an embedded PostgreSQL is started.",
    )
    p.add_argument("--clients", type=int, default=16, help="concurrent clients (default 16)")
    p.add_argument("--follows", type=int, default=4000, help="follows per run (default 4000)")
    p.add_argument("--shards", type=int, default=16, help="K of the sharded variant (default 16)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of each variant (default 3)")
    p.add_argument(
        "--loop",
        choices=("uvloop", "asyncio"),
        default="uvloop",
        help="event loop (default uvloop, as under uvicorn)",
    )
    p.add_argument(
        "--waits", action="store_true", help="sample pg_stat_activity wait events during runs"
    )
    args = p.parse_args(argv)
    if min(args.clients, args.follows, args.shards, args.rounds) < 1:
        p.error("--clients, --follows, --shards and --rounds must be >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: set up the database, run the benchmark, tear the database down."""
    args = parse_args(argv)
    run = asyncio.run
    if args.loop == "uvloop":
        try:
            import uvloop
        except ImportError:
            args.loop = "asyncio"
        else:
            run = uvloop.run
    with (
        bench_output("follow_hot", "follow_hot: N clients follow one account"),
        postgres_server(durable=True) as server,
        throwaway_database(server) as url,
    ):
        return run(bench(url, args))


if __name__ == "__main__":
    exit_with(main)
