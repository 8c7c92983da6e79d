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
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import asyncpg
import httpx

from adapters.jwt_codec import JwtCodec
from app.embedded import _free_port, spawn, stop_process
from app.embedded.replica import EmbeddedReplicaSet
from app.migrate import upgrade
from bench._support import dedicated_redis, quantile, run, table
from bench.feed_read import JWT_SECRET, QUERY, PgCpu, Server, check_page, make_data
from domain.identity.tokens import TokenConfig, issue_access_token


@contextlib.contextmanager
def api(variant: str, env_extra: dict[str, str], redis_url: str) -> Iterator[Server]:
    """``python -m bench.feed_read --serve`` with the variant's environment."""
    port = _free_port()
    env = dict(
        os.environ,
        **env_extra,
        REDIS_URL=redis_url,
        JWT_SECRET=JWT_SECRET,
        ROOST_ENV="development",
        ARQ_QUEUE=f"bench:{uuid.uuid4().hex[:8]}",
        RATE_LIMIT_REQUESTS="100000000",
    )
    if "DATABASE_REPLICA_URLS" not in env_extra:
        env.pop("DATABASE_REPLICA_URLS", None)
    proc = spawn([sys.executable, "-m", "bench.feed_read", "--serve", "--port", str(port)], env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{variant} server exited with {proc.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{variant} server did not answer /readyz in 60 s")
            time.sleep(0.1)
        yield Server(variant, url, proc.pid)
    finally:
        stop_process(proc)


async def segment(server: Server, seconds: float, clients: int, pgs: dict[str, PgCpu]) -> dict:
    """``clients`` tasks send the feed query for ``seconds``; CPU of everything."""
    assert server.client is not None
    latencies: list[float] = []

    async def worker(deadline: float) -> None:
        while time.perf_counter() < deadline:
            t = time.perf_counter()
            r = await server.client.post("/graphql", json={"query": QUERY})
            latencies.append(time.perf_counter() - t)
            if r.status_code != 200:
                raise AssertionError(f"HTTP {r.status_code}: {r.text[:200]}")
            check_page(r.content)

    before = {k: await p.snapshot() for k, p in pgs.items()}
    s0, t0 = server.cpu(), time.perf_counter()
    await asyncio.gather(*(worker(t0 + seconds) for _ in range(clients)))
    took = time.perf_counter() - t0
    after = {k: await p.snapshot() for k, p in pgs.items()}
    pg = {}
    for k in pgs:
        b, a = before[k], after[k]
        pg[k] = None if a is None or b is None else sum(c - b.get(p, 0.0) for p, c in a.items())
    return {
        "variant": server.variant,
        "n": len(latencies),
        "seconds": took,
        "latencies": latencies,
        "api_cpu": server.cpu() - s0,
        "pg": pg,
    }


async def drive(servers: Sequence[Server], token: str, urls: dict[str, str], args) -> None:
    pgs = {k: PgCpu(u) for k, u in urls.items()}
    limits = httpx.Limits(max_connections=args.clients, max_keepalive_connections=args.clients)
    async with contextlib.AsyncExitStack() as stack:
        for p in pgs.values():
            stack.push_async_callback(p.close)
        for s in servers:
            s.client = await stack.enter_async_context(
                httpx.AsyncClient(
                    base_url=s.url,
                    limits=limits,
                    timeout=60,
                    headers={"authorization": f"Bearer {token}"},
                )
            )
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
        segs = [r for r in results if r["variant"] == s.variant]
        n = sum(r["n"] for r in segs)
        lat = [x for r in segs for x in r["latencies"]]
        prim = sum(r["pg"]["primary"] or 0.0 for r in segs) / n
        repl = sum(r["pg"]["replica"] or 0.0 for r in segs) / n
        per[s.variant] = (statistics.median(r["n"] / r["seconds"] for r in segs), prim)
        rows.append(
            [
                s.variant,
                len(segs),
                f"{per[s.variant][0]:,.1f}",
                f"{1e3 * quantile(lat, 0.5):.0f}",
                f"{1e3 * quantile(lat, 0.99):.0f}",
                f"{1e3 * sum(r['api_cpu'] for r in segs) / n:.2f}",
                f"{1e3 * prim:.2f}",
                f"{1e3 * repl:.2f}",
            ]
        )
    print(
        table(
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
    p = argparse.ArgumentParser(prog="python -m bench.feed_read_replica")
    p.add_argument("--clients", type=int, default=32)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--warmup", type=float, default=3.0)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--authors", type=int, default=500)
    p.add_argument("--posts", type=int, default=20)
    p.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    with (
        tempfile.TemporaryDirectory(prefix="roost-bench-replica-") as tmp,
        dedicated_redis() as redis_url,
    ):
        pair = EmbeddedReplicaSet(Path(tmp) / "pg")
        pair.start()
        try:
            name = "roost_bench"
            asyncio.run(_create(pair.url(), name))
            upgrade(pair.url(name))
            viewer = asyncio.run(make_data(pair.url(name), args.authors, args.posts))
            asyncio.run(pair.wait_replayed())
            token = issue_access_token(
                TokenConfig(codec=JwtCodec(), secret=JWT_SECRET), viewer, uuid.uuid4()
            )
            urls = {"primary": pair.url(name), "replica": pair.replica_url(name)}
            with (
                api("primary", {"DATABASE_URL": urls["primary"]}, redis_url) as a,
                api(
                    "replica",
                    {"DATABASE_URL": urls["primary"], "DATABASE_REPLICA_URLS": urls["replica"]},
                    redis_url,
                ) as b,
            ):
                run(lambda: drive([a, b], token, urls, args), args.loop)
        finally:
            pair.stop()
    print(f"load at the end {os.getloadavg()[0]:.1f}")
    return 0


async def _create(url: str, name: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as exc:
        print(f"check failed: {exc}", file=sys.stderr)
        sys.exit(1)
