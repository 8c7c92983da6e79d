"""Feed read benchmark: the hydrated home-feed query over HTTP, cached feed vs SQL.

A viewer follows ``--authors`` (500) accounts with ``--posts`` (20) posts each. Two
uvicorn processes serve ``app.asgi:create_app`` on the same throwaway PostgreSQL
database, one process each:

- ``redis``: ``REDIS_URL`` names a dedicated ``redis-server`` (see ``bench._support``):
  the viewer's feed is a Redis sorted set (rebuilt once from PostgreSQL by the first
  read, then read from Redis), hydrated through the dataloaders;
- ``sql``: ``REDIS_URL`` names a port where nothing listens, so ``read_home_feed``
  falls back to ``home_entries_sql`` -- the production fallback, fan-out-on-read in
  one LATERAL query -- and counts ``roost_feed_postgres_fallbacks_total`` (checked).
  Each request also pays for refused Redis connects (rate limit, activity marker,
  feed read; ~0.2 ms each); the fallback's per-request warning (with a traceback) is
  not logged in either server, and neither writes access logs. The per-user rate
  limit is lifted (``RATE_LIMIT_REQUESTS``: one viewer sends every request) but still
  checked.

``--clients`` (32) concurrent clients (asyncio tasks, ``httpx.AsyncClient`` with
keep-alive) send::

    { viewer { feed(first: 20) { edges { cursor node { id caption createdAt
      author { username followerCount followedByViewer } } } } } }

in ``--seconds`` (10) segments, interleaved ``redis, sql, redis, sql`` (``--rounds``
2) after a warm-up of each, one server at a time. Every response must hold 20 edges
and no errors, and the first page must be the same from both servers. It prints
requests/s, p50/p99 latency, server and client CPU per request, and the ratio (goal
>= 3x the SQL baseline).

Usage::

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
        python -m bench.feed_read [--clients 32] [--seconds 10] [--rounds 2]
                                  [--authors 500] [--posts 20] [--redis-server PATH]

``DATABASE_URL`` names a server (a throwaway database is created there); unset, the
embedded PostgreSQL is started. ``REDIS_URL`` is never used.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

import httpx
import psutil
from sqlalchemy.engine import make_url

from app.embedded import _free_port
from bench import _support as bs

GOAL_RATIO = 3.0
QUERY = (
    "{ viewer { feed(first: 20) { edges { cursor node { id caption createdAt"
    " author { username followerCount followedByViewer } } } } } }"
)
PAGE = 20
CALIBRATION_SECONDS = 3.0


def metric(server: bs.Server, name: str) -> float:
    """The value of an unlabelled (or the sum of a labelled) Prometheus metric."""
    body = httpx.get(server.url + "/metrics", headers=bs.METRICS_AUTH, timeout=10).text
    total = 0.0
    for line in body.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            total += float(line.rsplit(" ", 1)[1])
    return total


# ---------------------------------------------------------------------------- client


@dataclass
class Segment(bs.Segment):
    """One timed segment against one server, with the client's and PostgreSQL's share."""

    pg_cpu: float | None = None
    connections: int = 0  # PostgreSQL sessions opened during the segment


def check_page(body: bytes) -> list[str]:
    """Return the post ids of a response; raise AssertionError unless it is a page of
    20 hydrated edges without errors."""
    doc = json.loads(body)
    if doc.get("errors"):
        raise AssertionError(f"GraphQL errors: {doc['errors'][:2]}")
    edges = doc["data"]["viewer"]["feed"]["edges"]
    if len(edges) != PAGE or not edges[0]["node"]["author"]["username"]:
        raise AssertionError(f"expected {PAGE} hydrated edges, got {len(edges)}")
    return [e["node"]["id"] for e in edges]


class PgCpu:
    """CPU seconds used by the PostgreSQL backends of the bench database, read with
    psutil; unavailable (None) when the server is not a local process."""

    def __init__(self, database_url: str) -> None:
        self.dsn = make_url(database_url).set(drivername="postgresql")
        self.conn = None

    async def snapshot(self) -> dict[int, float] | None:
        """``{backend pid: CPU seconds so far}``, or None when they cannot be read."""
        import asyncpg

        if self.conn is None:
            self.conn = await asyncpg.connect(self.dsn.render_as_string(hide_password=False))
        rows = await self.conn.fetch(
            "SELECT pid, current_database() AS db FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND backend_type = 'client backend'"
        )
        out = {}
        for r in rows:
            try:
                proc = psutil.Process(r["pid"])
                if r["db"] not in " ".join(proc.cmdline()):
                    return None
                t = proc.cpu_times()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            out[r["pid"]] = t.user + t.system
        return out

    async def sessions(self) -> int:
        """Sessions opened on the bench database so far (``pg_stat_database``)."""
        await self.snapshot()  # connects
        assert self.conn is not None
        return int(
            await self.conn.fetchval(
                "SELECT sessions FROM pg_stat_database WHERE datname = current_database()"
            )
        )

    @staticmethod
    def used(before: dict[int, float] | None, after: dict[int, float] | None) -> float | None:
        """CPU seconds the backends used between two snapshots (None if either is)."""
        if before is None or after is None:
            return None
        return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())

    async def close(self) -> None:
        """Close the monitoring connection."""
        if self.conn is not None:
            await self.conn.close()


async def segment(
    server: bs.Server, seconds: float, clients: int, pg: PgCpu, query: str = QUERY
) -> Segment:
    """``clients`` tasks send ``query`` back to back for ``seconds``."""
    assert server.client is not None
    body = json.dumps({"query": query}).encode()
    check = check_page if query == QUERY else (lambda _: None)
    result = Segment(server.variant, seconds)
    p0, n0 = await pg.snapshot(), await pg.sessions()
    await bs.post_segment(server, server.client, "", body, seconds, clients, check, result=result)
    p1, n1 = await pg.snapshot(), await pg.sessions()
    result.connections = n1 - n0
    result.pg_cpu = PgCpu.used(p0, p1)
    return result


async def drive(
    servers: Sequence[bs.Server], token: str, database_url: str, args: argparse.Namespace
) -> None:
    """Warm up both servers, check they serve the same page, run the interleaved
    segments and print the figures."""
    pg = PgCpu(database_url)
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(pg.close)
        for s in servers:
            s.client = await stack.enter_async_context(bs.authorized_client(s, token, args.clients))
        pages = {}
        for s in servers:
            r = await s.client.post("/graphql", json={"query": QUERY})
            pages[s.variant] = check_page(r.content)
        if pages["redis"] != pages["sql"]:
            raise AssertionError("the two servers returned different first pages")
        for s in servers:
            await segment(s, args.warmup, args.clients, pg)
        fallbacks0 = {s.variant: metric(s, "roost_feed_postgres_fallbacks_total") for s in servers}

        results: list[Segment] = []
        for _ in range(args.rounds):
            for s in servers:
                results.append(await segment(s, args.seconds, args.clients, pg))

        fallbacks = {
            s.variant: metric(s, "roost_feed_postgres_fallbacks_total") - fallbacks0[s.variant]
            for s in servers
        }
        rebuilds = metric(servers[0], "roost_feed_rebuilds_total")
        report(results, fallbacks, rebuilds, args)
        # A yardstick of the machine right now: the cheapest query on the same server.
        floor = await segment(servers[0], CALIBRATION_SECONDS, args.clients, pg, "{ __typename }")
        print(
            f"yardstick: {{ __typename }} on the redis server: {floor.rps:,.0f} req/s,"
            f" {1e3 * floor.server_cpu / len(floor.latencies):.2f} ms server CPU per request"
        )


def _pg_ms(segs: Sequence[Segment], n: int) -> str:
    if any(r.pg_cpu is None for r in segs):
        return "n/a"
    return f"{1e3 * sum(r.pg_cpu or 0.0 for r in segs) / n:.2f}"


def report(
    results: Sequence[Segment],
    fallbacks: dict[str, float],
    rebuilds: float,
    args: argparse.Namespace,
) -> None:
    """Print one row per segment, one per variant, the metric check and the ratio.

    CPU columns are milliseconds per request: the uvicorn process, PostgreSQL's
    backends of the bench database (when local; only those still connected at the end
    of the segment, so an undercount when ``pg connects`` shows pool churn) and the
    bench's own clients."""
    rows = []
    totals = {}
    for variant in (None, "redis", "sql"):
        segs = [r for r in results if variant is None or r.variant == variant]
        groups = [[r] for r in segs] if variant is None else [segs]
        for g in groups:
            lat = [x for r in g for x in r.latencies]
            n, secs = len(lat), sum(r.seconds for r in g)
            name = g[0].variant if variant is None else f"{variant} (all)"
            if variant is not None:
                totals[variant] = (n / secs, bs.quantile(lat, 0.99))
            rows.append(
                [
                    name,
                    f"{secs:.1f}",
                    n,
                    f"{n / secs:,.0f}",
                    f"{1e3 * bs.quantile(lat, 0.5):.1f}",
                    f"{1e3 * bs.quantile(lat, 0.99):.1f}",
                    f"{1e3 * sum(r.server_cpu for r in g) / n:.2f}",
                    _pg_ms(g, n),
                    f"{1e3 * sum(r.client_cpu for r in g) / n:.2f}",
                    sum(r.connections for r in g),
                ]
            )
    header = (
        "variant",
        "s",
        "requests",
        "req/s",
        "p50 ms",
        "p99 ms",
        "server",
        "pg",
        "client",
        "pg connects",
    )
    print(bs.table(header, rows))
    sql_requests = sum(len(r.latencies) for r in results if r.variant == "sql")
    print(
        f"roost_feed_postgres_fallbacks_total during the runs: sql {fallbacks['sql']:,.0f}"
        f" (requests {sql_requests:,}), redis {fallbacks['redis']:,.0f};"
        f" feed rebuilds on the redis server: {rebuilds:.0f}"
    )
    if fallbacks["sql"] < sql_requests or fallbacks["redis"] != 0:
        raise AssertionError("the sql server did not serve every page by the fallback")
    (redis_rps, redis_p99), (sql_rps, sql_p99) = totals["redis"], totals["sql"]
    ratio = redis_rps / sql_rps
    print(
        f"redis {redis_rps:,.0f} req/s p99 {1e3 * redis_p99:.1f} ms; sql {sql_rps:,.0f} req/s"
        f" p99 {1e3 * sql_p99:.1f} ms; ratio {ratio:.2f}x"
        f" (goal >= {GOAL_RATIO:.0f}x: {'met' if ratio >= GOAL_RATIO else 'NOT met'})"
    )


# ------------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line (see the module docstring)."""
    p = bs.bench_parser("feed_read", __doc__)
    bs.add_run_options(p, authors=500, posts=20, clients=32, seconds=10.0, rounds=2, warmup=3.0)
    p.add_argument(
        "--vacuum", action="store_true", help="VACUUM the data first (SQL feed's best case)"
    )
    bs.add_run_options(p, redis_server=True)
    args = p.parse_args(argv)
    if min(args.clients, args.rounds, args.authors) < 1 or args.posts < 1:
        p.error("counts must be >= 1")
    if args.authors * args.posts < PAGE + 1:
        p.error(f"the feed needs more than {PAGE} posts")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: data, two servers, the interleaved segments."""
    args = parse_args(argv)
    with bs.bench_output("feed_read", "feed_read: feed pages from Redis vs from PostgreSQL"):
        return _main(args)


def _main(args: argparse.Namespace) -> int:
    print(
        f"{bs.machine()}; {args.clients} clients,"
        f" {args.rounds} x {args.seconds:.0f} s per variant; viewer follows"
        f" {args.authors} authors x {args.posts} posts; {'VACUUM' if args.vacuum else 'no VACUUM'}"
    )
    dead_redis = f"redis://127.0.0.1:{_free_port()}/0"  # nothing listens there
    with bs.database_and_redis(args.redis_server) as (database_url, redis_url):
        viewer = asyncio.run(
            bs.make_data(database_url, args.authors, args.posts, vacuum=args.vacuum)
        )
        token = asyncio.run(bs.viewer_token(database_url, viewer))
        with (
            bs.server_process("redis", database_url, redis_url) as cached,
            bs.server_process("sql", database_url, dead_redis) as sql,
        ):
            bs.run(lambda: drive([cached, sql], token, database_url, args))
    bs.print_end_load()
    return 0


if __name__ == "__main__":
    bs.exit_with(main)
