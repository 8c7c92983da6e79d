"""Feed read with hydration from a read replica vs from the primary alone, same run.

The bench starts a PostgreSQL primary and a streaming replica of its own
(``app.embedded.replica``: initdb + ``pg_basebackup -R`` on loopback ports, durability
off like the test server) and a dedicated Redis; the data is ``bench.feed_read``'s (a
viewer following ``--authors`` authors with ``--posts`` posts each). Two uvicorn
processes serve ``create_app`` (one at a time, interleaved segments after a warm-up):

- ``primary``: ``DATABASE_URL`` only, every read on the primary;
- ``replica``: the same plus ``DATABASE_REPLICA_URLS``: the feed query's reads
  (dataloaders: posts, authors, counts, viewer flags) go to the replica.

``--clients`` clients send ``bench.feed_read``'s hydrated feed query. Per variant:
req/s, p50/p99, the API process's CPU per request, and the CPU per request of the
primary's and the replica's backends (psutil, both servers are local). Goal: the
primary's CPU per request drops, and req/s does not.

Usage::

    python -m bench.feed_read_replica [--clients 32] [--seconds 10] [--rounds 2]
                                      [--authors 500] [--posts 20]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path

import asyncpg

from app.embedded.replica import EmbeddedReplicaSet
from app.migrate import upgrade
from bench import _support as bs
from bench.feed_read import QUERY, PgCpu, check_page


def api(variant: str, env_extra: dict[str, str], redis_url: str):
    """The API (:func:`bench._support.server_process`) with the variant's environment."""
    env: dict[str, str | None] = {"DATABASE_REPLICA_URLS": None, **env_extra}
    return bs.server_process(variant, None, redis_url, env=env, ready="/readyz", timeout=60)


BODY = json.dumps({"query": QUERY}).encode()


async def segment(
    server: bs.Server, seconds: float, clients: int, pgs: dict[str, PgCpu]
) -> tuple[bs.Segment, dict[str, float | None]]:
    """``clients`` tasks send the feed query for ``seconds``; the segment and the CPU
    seconds of each database's backends."""
    assert server.client is not None
    before = {k: await p.snapshot() for k, p in pgs.items()}
    seg = await bs.post_segment(
        server, server.client, server.variant, BODY, seconds, clients, check_page
    )
    return seg, {k: PgCpu.used(before[k], await p.snapshot()) for k, p in pgs.items()}


async def drive(servers: Sequence[bs.Server], token: str, urls: dict[str, str], args) -> None:
    pgs = {k: PgCpu(u) for k, u in urls.items()}
    async with contextlib.AsyncExitStack() as stack:
        for p in pgs.values():
            stack.push_async_callback(p.close)
        for s in servers:
            s.client = await stack.enter_async_context(bs.authorized_client(s, token, args.clients))
        firsts = []
        for s in servers:
            r = await s.client.post("/graphql", json={"query": QUERY})
            firsts.append(check_page(r.content))
        if firsts[0] != firsts[1]:
            raise AssertionError("the two servers returned different first pages")
        for s in servers:
            await segment(s, args.warmup, args.clients, pgs)
        results = []
        for _ in range(args.rounds):
            for s in servers:
                results.append(await segment(s, args.seconds, args.clients, pgs))
    rows = []
    per = {}
    for s in servers:
        segs = [(r, pg) for r, pg in results if r.variant == s.variant]
        lat = [x for r, _ in segs for x in r.latencies]
        n = len(lat)
        prim = sum(pg["primary"] or 0.0 for _, pg in segs) / n
        repl = sum(pg["replica"] or 0.0 for _, pg in segs) / n
        per[s.variant] = (statistics.median(r.rps for r, _ in segs), prim)
        rows.append(
            [
                s.variant,
                len(segs),
                f"{per[s.variant][0]:,.1f}",
                f"{1e3 * bs.quantile(lat, 0.5):.0f}",
                f"{1e3 * bs.quantile(lat, 0.99):.0f}",
                f"{1e3 * sum(r.server_cpu for r, _ in segs) / n:.2f}",
                f"{1e3 * prim:.2f}",
                f"{1e3 * repl:.2f}",
            ]
        )
    print(
        bs.table(
            (
                "reads from",
                "segments",
                "req/s",
                "p50 ms",
                "p99 ms",
                "API CPU ms/req",
                "primary CPU ms/req",
                "replica CPU ms/req",
            ),
            rows,
        )
    )
    (rps_p, cpu_p), (rps_r, cpu_r) = per["primary"], per["replica"]
    print(
        f"with the replica: req/s {rps_r / rps_p:.2f}x (goal: not lower), primary CPU per"
        f" request {1e3 * cpu_p:.2f} -> {1e3 * cpu_r:.2f} ms"
        f" ({(cpu_r / cpu_p if cpu_p else 0):.2f}x; goal: lower)"
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = bs.bench_parser("feed_read_replica", __doc__)
    bs.add_run_options(
        p, authors=500, posts=20, clients=32, seconds=10.0, rounds=2, warmup=3.0, loop=True
    )
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    print(bs.machine())
    with (
        tempfile.TemporaryDirectory(prefix="roost-bench-replica-") as tmp,
        bs.dedicated_redis() as redis_url,
    ):
        pair = EmbeddedReplicaSet(Path(tmp) / "pg")
        pair.start()
        try:
            name = "roost_bench"
            asyncio.run(_create(pair.url(), name))
            upgrade(pair.url(name))
            viewer = asyncio.run(bs.make_data(pair.url(name), args.authors, args.posts))
            token = asyncio.run(bs.viewer_token(pair.url(name), viewer))
            asyncio.run(pair.wait_replayed())
            urls = {"primary": pair.url(name), "replica": pair.replica_url(name)}
            with (
                api("primary", {"DATABASE_URL": urls["primary"]}, redis_url) as a,
                api(
                    "replica",
                    {"DATABASE_URL": urls["primary"], "DATABASE_REPLICA_URLS": urls["replica"]},
                    redis_url,
                ) as b,
            ):
                bs.run(lambda: drive([a, b], token, urls, args), args.loop)
        finally:
            pair.stop()
    bs.print_end_load()
    return 0


async def _create(url: str, name: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()


if __name__ == "__main__":
    bs.exit_with(main)
