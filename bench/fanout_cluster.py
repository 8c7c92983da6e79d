"""Fan-out on a 3-master Redis Cluster against one Redis, in the same run.

Both stores are started by the bench (the same ``redis-server`` build, no persistence,
``--redis-server PATH`` to pick one): one standalone Redis, and a cluster of three
masters on loopback (``app.embedded.cluster``). An author has ``--feeds`` active
followers (10,000) whose feeds hold ``--entries`` entries (800) on both stores.

Part 1, one process: posts made with ``create_post(dispatcher=None)`` are fanned out
by calling ``domain.feed.fan_out.fan_out_post``, alternately on one Redis and on the
cluster (after warm-up posts). Per variant: feeds/s of the call, p50/p95 of the lag
(post commit to the last feed written), client CPU and Redis CPU (all masters) per
feed. Goal: the cluster >= 0.8x one Redis.

Part 2, real workers: ``roost worker`` processes (arq, the queue on the standalone
Redis, the feed store on the cluster) drain a burst of ``--burst`` posts, with one
worker and then with two. Feeds/s over the burst (first commit to the last event
dispatched) and p95 of each post's commit -> dispatched. Goal: two workers >= 1.5x one.

Usage::

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
        python -m bench.fanout_cluster [--feeds 10000] [--entries 800] [--posts 10]
                                       [--burst 24] [--redis-server PATH] [--no-workers]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from redis.asyncio import Redis
from sqlalchemy import text

from adapters.feedstore import Call, ClusterFeedRedis, FeedRedis
from adapters.feedstore.stores import feed_stores
from app.database import create_engine
from app.embedded import spawn, stop_process
from app.embedded.cluster import EmbeddedRedisCluster
from bench._support import (
    add_run_options,
    bench_parser,
    dedicated_redis,
    exit_with,
    feed_entries,
    machine,
    make_author,
    postgres_server,
    print_end_load,
    quantile,
    run,
    table,
    throwaway_database,
)
from domain.feed.config import FeedConfig
from domain.feed.fan_out import fan_out_post
from domain.feed.timelines import SENTINEL
from domain.posts.create_post import create_post

GOAL_CLUSTER_RATIO = 0.8
GOAL_WORKERS_RATIO = 1.5


async def fill(store: FeedRedis, keys: Sequence[str], entries: int, payload: bytes) -> None:
    """Give every key a full feed (RESTORE of one dumped feed), grouped by node."""
    ttl_ms = 30 * 86_400_000
    for i in range(0, len(keys), 2_000):
        await store.execute(
            [Call.of(k, "RESTORE", k, ttl_ms, payload, "REPLACE") for k in keys[i : i + 2_000]]
        )


async def dumped_feed(url: str, entries: int) -> bytes:
    """A feed of ``entries`` entries plus the sentinel, DUMPed from a scratch key."""
    redis = Redis.from_url(url)
    try:
        mapping = {SENTINEL: 0} | {e.member: e.score for e in feed_entries(entries)}
        await redis.zadd("bench:template", mapping)
        payload = await redis.dump("bench:template")
        await redis.delete("bench:template")
        return payload
    finally:
        await redis.aclose()


async def redis_cpu(urls: Sequence[str]) -> float:
    """CPU seconds used so far by the servers at ``urls`` (summed)."""
    total = 0.0
    for url in urls:
        redis = Redis.from_url(url)
        try:
            info = await redis.info("cpu")
            total += float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
        finally:
            await redis.aclose()
    return total


@dataclasses.dataclass
class Sample:
    variant: str
    seconds: float
    lag: float
    client_cpu: float
    redis_cpu: float
    feeds: int


async def part1(
    db_url: str, single_url: str, cluster: EmbeddedRedisCluster, args
) -> tuple[float, float]:
    """One process, fan_out_post on each store in turn; returns (single, cluster)
    median feeds/s."""
    engine = create_engine(db_url, pool_size=4, max_overflow=2)
    single = FeedRedis(Redis.from_url(single_url))
    clustered = ClusterFeedRedis.connect(nodes=cluster.nodes)
    node_urls = [f"redis://{n}/0" for n in cluster.nodes]
    try:
        n = args.feeds
        config = dataclasses.replace(FeedConfig(), pull_threshold=n + 1)
        author, followers = await make_author(engine, n)
        payload = await dumped_feed(single_url, args.entries)
        stores = {"one Redis": single, "cluster": clustered}
        t0 = time.perf_counter()
        for store in stores.values():
            keys = [feed_stores(store, config).feeds.key(f) for f in followers]
            await fill(store, keys, args.entries, payload)
        print(
            f"{n:,} followers, feeds of {args.entries} entries on both stores"
            f" (filled in {time.perf_counter() - t0:.1f} s); batch {config.batch_size}"
        )
        samples: list[Sample] = []
        servers = {"one Redis": [single_url], "cluster": node_urls}
        for i in range(args.posts + 2):
            for name, store in stores.items():
                post = await create_post(
                    engine, author, caption=f"p{i}", counter_shards=16, dispatcher=None
                )
                r0 = await redis_cpu(servers[name])
                c0, t = time.process_time(), time.perf_counter()
                result = await fan_out_post(engine, feed_stores(store, config), config, post.id)
                took, cpu = time.perf_counter() - t, time.process_time() - c0
                r1 = await redis_cpu(servers[name])
                if result.mode != "push" or result.feeds_written != n:
                    raise AssertionError(f"{name}: unexpected fan-out {result}")
                if i >= 2:  # warm-up
                    samples.append(Sample(name, took, result.lag_seconds, cpu, r1 - r0, n))
        rows = []
        rates = {}
        for name in stores:
            ss = [s for s in samples if s.variant == name]
            feeds = sum(s.feeds for s in ss)
            rates[name] = statistics.median(s.feeds / s.seconds for s in ss)
            rows.append(
                [
                    name,
                    len(ss),
                    f"{rates[name]:,.0f}",
                    f"{1e3 * quantile([s.lag for s in ss], 0.5):.0f}",
                    f"{1e3 * quantile([s.lag for s in ss], 0.95):.0f}",
                    f"{1e6 * sum(s.client_cpu for s in ss) / feeds:.2f}",
                    f"{1e6 * sum(s.redis_cpu for s in ss) / feeds:.2f}",
                ]
            )
        print(
            table(
                (
                    "store",
                    "posts",
                    "feeds/s",
                    "lag p50 ms",
                    "lag p95 ms",
                    "client µs/feed",
                    "redis µs/feed",
                ),
                rows,
            )
        )
        ratio = rates["cluster"] / rates["one Redis"]
        p95 = {k: quantile([s.lag for s in samples if s.variant == k], 0.95) for k in stores}
        print(
            f"cluster / one Redis, one process: feeds/s {ratio:.2f}x (goal >="
            f" {GOAL_CLUSTER_RATIO}: {'met' if ratio >= GOAL_CLUSTER_RATIO else 'NOT met'});"
            f" p95 lag {1e3 * p95['cluster']:.0f} vs {1e3 * p95['one Redis']:.0f} ms"
        )
        return rates["one Redis"], rates["cluster"]
    finally:
        await single.aclose()
        await clustered.aclose()
        await engine.dispose()


# ------------------------------------------------------------------- part 2: workers


class Workers:
    """``count`` ``roost worker`` processes on one queue, logs in a temporary folder."""

    def __init__(self, env: dict[str, str], count: int, folder: Path) -> None:
        self.env, self.count, self.folder = env, count, folder
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []

    def __enter__(self) -> Workers:
        roost = str(Path(sys.executable).with_name("roost"))
        for i in range(self.count):
            log = self.folder / f"worker{i}-{uuid.uuid4().hex[:6]}.log"
            self.logs.append(log)
            with open(log, "wb") as out:
                self.procs.append(
                    spawn([roost, "worker"], env=self.env, own_session=True, stdout=out, stderr=out)
                )
        deadline = time.monotonic() + 60
        while not all("Starting worker" in p.read_text(errors="replace") for p in self.logs):
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                raise RuntimeError("workers did not start:\n" + self.logs[0].read_text())
            time.sleep(0.1)
        return self

    def __exit__(self, *exc) -> None:
        for proc in self.procs:
            stop_process(proc, timeout=20)


async def burst(engine, author: uuid.UUID, posts: int, feeds: int, dispatcher) -> tuple:
    """Make ``posts`` posts at once (each dispatched to the queue after its commit);
    wait until every one is dispatched. Returns (feeds/s, p95 lag s)."""
    t0 = time.time()
    made = await asyncio.gather(
        *(
            create_post(engine, author, caption=f"b{i}", counter_shards=16, dispatcher=dispatcher)
            for i in range(posts)
        )
    )
    ids = [p.id for p in made]
    deadline = time.monotonic() + 600
    while True:
        async with engine.connect() as conn:
            rows = (
                await conn.execute(
                    text(
                        "SELECT extract(epoch FROM o.dispatched_at - p.created_at),"
                        " extract(epoch FROM o.dispatched_at) FROM outbox o"
                        " JOIN posts p ON p.id = o.aggregate_id"
                        " WHERE o.aggregate_id = ANY(CAST(:ids AS uuid[]))"
                        " AND o.topic = 'post.created' AND o.dispatched_at IS NOT NULL"
                    ),
                    {"ids": ids},
                )
            ).all()
        if len(rows) == posts:
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"only {len(rows)} of {posts} posts dispatched")
        await asyncio.sleep(0.05)
    lags = [float(r[0]) for r in rows]
    end = max(float(r[1]) for r in rows)
    return posts * feeds / (end - t0), quantile(lags, 0.95)


async def part2(db_url: str, single_url: str, cluster: EmbeddedRedisCluster, args) -> None:
    """Real arq workers on the cluster: one, then two."""
    from app.jobs import ArqDispatcher

    engine = create_engine(db_url, pool_size=8, max_overflow=8)
    clustered = ClusterFeedRedis.connect(nodes=cluster.nodes)
    n = args.feeds
    queue = f"bench-fanout:{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "REDIS_URL": single_url,
        "FEED_REDIS_CLUSTER_NODES": ",".join(cluster.nodes),
        "ARQ_QUEUE": queue,
        "WORKER_METRICS_PORT": "0",
        "PULL_THRESHOLD": str(n + 1),
        "PUSH_BACK_THRESHOLD": str(n),
        "JOB_TIMEOUT_S": "120",
    }
    dispatcher = ArqDispatcher(single_url, queue)
    try:
        author, followers = await make_author(engine, n)
        config = dataclasses.replace(FeedConfig(), pull_threshold=n + 1)
        payload = await dumped_feed(single_url, args.entries)
        keys = [feed_stores(clustered, config).feeds.key(f) for f in followers]
        await fill(clustered, keys, args.entries, payload)
        results = {}
        with tempfile.TemporaryDirectory(prefix="roost-bench-workers-") as folder:
            for count in (1, 2):
                with Workers(env, count, Path(folder)):
                    for _ in range(2 * count):  # warm-up: every worker has connected
                        await burst(engine, author, 1, n, dispatcher)
                    results[count] = await burst(engine, author, args.burst, n, dispatcher)
        rows = [
            [f"{k} worker{'s' if k > 1 else ''}", args.burst, f"{r:,.0f}", f"{1e3 * p95:.0f}"]
            for k, (r, p95) in results.items()
        ]
        print(table(("cluster, arq", "posts", "feeds/s", "commit->dispatched p95 ms"), rows))
        ratio = results[2][0] / results[1][0]
        print(
            f"two workers / one worker on the cluster: {ratio:.2f}x (goal >="
            f" {GOAL_WORKERS_RATIO}: {'met' if ratio >= GOAL_WORKERS_RATIO else 'NOT met'})"
        )
    finally:
        await dispatcher.close()
        await clustered.aclose()
        await engine.dispose()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = bench_parser("fanout_cluster", __doc__)
    add_run_options(p, feeds=10_000, entries=800, redis_server=True, loop=True)
    p.add_argument("--posts", type=int, default=10, help="posts per store in part 1")
    p.add_argument("--burst", type=int, default=24, help="posts per burst in part 2")
    p.add_argument("--no-workers", action="store_true", help="skip part 2")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    print(f"{machine()}, loop {args.loop}")
    with (
        tempfile.TemporaryDirectory(prefix="roost-bench-cluster-") as tmp,
        dedicated_redis(args.redis_server) as single_url,
        postgres_server() as server,
    ):
        cluster = EmbeddedRedisCluster(Path(tmp), binary=args.redis_server)
        cluster.start()
        try:
            with throwaway_database(server) as url:
                run(lambda: part1(url, single_url, cluster, args), args.loop)
            if not args.no_workers:
                with throwaway_database(server) as url:
                    run(lambda: part2(url, single_url, cluster, args), args.loop)
        finally:
            cluster.stop()
    print_end_load("every wall figure")
    return 0


if __name__ == "__main__":
    exit_with(main)
