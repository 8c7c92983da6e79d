"""The API's own cost of one home-feed page, in process: CPU per request, SQL statements
and transactions per page, where the CPU goes, and the hydration's time against the
per-loader reads it replaces.

Runs over a database prepared by ``bench.feed_vs_postgraphile --keep-db NAME`` (the
real Slashdot graph and 200,000 posts), with a dedicated ``redis-server``; the API is
``create_app`` driven through ``httpx.ASGITransport`` (no sockets, no HTTP server), one
request at a time, so ``time.process_time()`` per request is the API's CPU (parse,
execute, SQL client, Redis client, JSON) and nothing else's.

It prints, for each viewer (``sd195`` follows 501, ``sd2494`` 2,510):

- API CPU per feed request (median of ``--requests`` after a warm-up) and wall time;
- SQL statements per page (``before_cursor_execute`` on the engine, which the raw
  asyncpg reads also report) and transactions per page (``BEGIN … ROLLBACK`` pairs:
  each costs two more round trips);
- the hydration of one page (the posts, their authors, the viewer's follows, blocks
  and mutes of them, the authors' counts): the one statement of
  ``domain.feed.hydration`` against the six per-loader reads of the same facts as the
  dataloaders ran them before it (each through SQLAlchemy on its own pooled
  connection), wall time, as a ratio in the same process;
- a cProfile split of the API's CPU by package over ``--profile`` requests.

Usage::

    python -m bench.feed_cpu --db postgresql://postgres@127.0.0.1:5432/roost_bench_perfdb
        [--viewers sd195 sd2494] [--requests 300] [--profile 200]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import statistics
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence

import httpx
from sqlalchemy import event, text

from app.database import create_engine
from app.settings import Settings
from bench._slashdot import in_process_args
from bench._support import bench_output, dedicated_redis, exit_with, run, table
from domain.visibility.predicates import is_live

FEED = (
    "{ viewer { feed(first: 20) { edges { cursor node { id caption createdAt"
    " author { username displayName followerCount } } } pageInfo { endCursor hasNextPage } } } }"
)
LOG_IN = (
    "mutation($u: String!, $p: String!) { logIn(input: {username: $u, password: $p}) {"
    " ... on LogInSuccess { accessToken } ... on Error { code message } } }"
)


class Counter:
    """Statements and transactions the engine runs (SQLAlchemy's events)."""

    def __init__(self, engine) -> None:
        self.statements = 0
        self.begins = 0
        self.texts: list[str] = []
        event.listen(engine.sync_engine, "before_cursor_execute", self._statement)
        event.listen(engine.sync_engine, "begin", self._begin)

    def _statement(self, conn, cursor, statement, *args) -> None:
        self.statements += 1
        self.texts.append(" ".join(statement.split())[:100])

    def _begin(self, conn) -> None:
        self.begins += 1

    def reset(self) -> None:
        self.statements = self.begins = 0
        self.texts.clear()


async def _feed(client: httpx.AsyncClient, token: str) -> dict:
    r = await client.post(
        "/graphql", json={"query": FEED}, headers={"authorization": f"Bearer {token}"}
    )
    doc = r.json()
    if r.status_code != 200 or doc.get("errors"):
        raise RuntimeError(f"feed failed: HTTP {r.status_code} {str(doc)[:300]}")
    edges = doc["data"]["viewer"]["feed"]["edges"]
    if len(edges) != 20:
        raise RuntimeError(f"feed returned {len(edges)} edges")
    return doc


def _package(filename: str) -> str:
    """Group a profiled function by where it lives."""
    for key in (
        "graphql",
        "strawberry",
        "sqlalchemy",
        "asyncpg",
        "aiodataloader",
        "redis",
        "starlette",
        "httpx",
        "pydantic",
        "jwt",
        "orjson",
        "json",
        "uvloop",
        "asyncio",
        "greenlet",
    ):
        if f"/{key}/" in filename or f"/{key}." in filename:
            return key
    for key in ("/domain/", "/schema/", "/resolvers/", "/app/"):
        if key in filename:
            return "roost " + key.strip("/")
    if filename.startswith("~") or filename.startswith("<"):
        return "builtins"
    return "other"


def profile_split(prof: cProfile.Profile, requests: int) -> list[list[str]]:
    """Self CPU per package, µs per request, largest first."""
    stats = pstats.Stats(prof)
    per: dict[str, float] = defaultdict(float)
    for (filename, _line, _name), (_cc, _nc, tt, _ct, _callers) in stats.stats.items():
        per[_package(filename)] += tt
    total = sum(per.values())
    rows = sorted(per.items(), key=lambda kv: -kv[1])
    return [
        [name, f"{1e6 * t / requests:,.0f}", f"{100 * t / total:.0f} %"] for name, t in rows
    ] + [["total", f"{1e6 * total / requests:,.0f}", "100 %"]]


#: The per-loader reads of a page as the dataloaders ran them before the hydration
#: statement (commit 18c9090): each through SQLAlchemy Core on its own pooled connection.
_LOADER_SQL = {
    "posts": "SELECT id, author_id, caption, media, created_at, deleted_at FROM posts"
    " WHERE id = ANY(CAST(:ids AS uuid[]))",
    "blocks": "SELECT blocked_id FROM blocks WHERE blocker_id = :me"
    " AND blocked_id = ANY(CAST(:ids AS uuid[]))"
    " UNION SELECT blocker_id FROM blocks WHERE blocked_id = :me"
    " AND blocker_id = ANY(CAST(:ids AS uuid[]))",
    "follows": "SELECT followee_id FROM follows WHERE follower_id = :me"
    f" AND followee_id = ANY(CAST(:ids AS uuid[])) AND {is_live()}",
    "mutes": "SELECT muted_id FROM mutes WHERE muter_id = :me"
    " AND muted_id = ANY(CAST(:ids AS uuid[]))",
    "counts": """
        WITH partners AS (SELECT ARRAY(SELECT blocked_id FROM blocks WHERE blocker_id = :me
            UNION SELECT blocker_id FROM blocks WHERE blocked_id = :me) AS ids)
        SELECT entity_id, kind, sum(value)::bigint FROM counter_shards
        WHERE entity_id = ANY(CAST(:ids AS uuid[]))
          AND kind = ANY(CAST('{followers,following,posts}' AS text[]))
        GROUP BY entity_id, kind
    """,
}


async def hydration_ratio(engine, viewer_id: uuid.UUID, post_ids: list[uuid.UUID], n: int):
    """Median µs per page: the per-loader reads (six statements, each on its own
    connection: posts, then users, then blocks, follows and mutes together, then
    counts, as the loaders batch them) and the one hydration statement. Returns
    (loaders, hydration or None when this commit has none)."""

    from sqlalchemy import select

    from domain.identity.models import users
    from domain.identity.queries import USER_COLUMNS

    async def one(name: str, ids: list[uuid.UUID]):
        async with engine.connect() as conn:
            if name == "users":  # SQLAlchemy Core, an expanding IN, as users_by_ids was
                return (await conn.execute(select(*USER_COLUMNS).where(users.c.id.in_(ids)))).all()
            return (
                await conn.execute(text(_LOADER_SQL[name]), {"ids": ids, "me": viewer_id})
            ).all()

    async def old() -> None:
        rows = await one("posts", post_ids)
        authors = list({r[1] for r in rows})
        await one("users", authors)
        others = [a for a in authors if a != viewer_id]
        await asyncio.gather(one("blocks", others), one("follows", others), one("mutes", others))
        await one("counts", authors)

    try:
        from domain.feed.hydration import Wanted, hydrate_posts
    except ImportError:
        hydrate_posts = None

    async def new() -> None:
        await hydrate_posts(engine, viewer_id, post_ids, Wanted(user_counts=True))

    out = []
    for fn in (old, new if hydrate_posts else None):
        if fn is None:
            out.append(None)
            continue
        for _ in range(20):
            await fn()
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            await fn()
            times.append(time.perf_counter() - t0)
        out.append(1e6 * statistics.median(times))
    return out


async def main_async(args: argparse.Namespace, redis_url: str) -> None:
    settings = Settings(
        DATABASE_URL=args.db,
        REDIS_URL=redis_url,
        JWT_SECRET="feed-cpu-" + uuid.uuid4().hex,
        RATE_LIMIT_ENABLED=False,
        ARQ_QUEUE="bench:feed_cpu",
        METRICS_PORT=0,
        WORKER_METRICS_PORT=0,
        ACCESS_TOKEN_MINUTES=600,
    )
    from app.asgi import create_app

    engine = create_engine(args.db, pool_size=10, max_overflow=10)
    app = create_app(settings, engine=engine)
    counter = Counter(engine)
    rows = []
    hyd_rows = []
    split: dict[str, list[list[str]]] = {}
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://roost.bench"
        ) as client,
    ):
        for name in args.viewers:
            r = await client.post(
                "/graphql",
                json={"query": LOG_IN, "variables": {"u": name, "p": settings.dev_password}},
            )
            token = r.json()["data"]["logIn"]["accessToken"]
            for _ in range(args.warmup):
                doc = await _feed(client, token)
            counter.reset()
            await _feed(client, token)
            statements, begins = counter.statements, counter.begins
            texts = list(counter.texts)
            cpu, wall = [], []
            for _ in range(args.requests):
                c0, w0 = time.process_time(), time.perf_counter()
                await _feed(client, token)
                cpu.append(time.process_time() - c0)
                wall.append(time.perf_counter() - w0)
            rows.append(
                [
                    name,
                    f"{1e3 * statistics.median(cpu):.2f}",
                    f"{1e3 * statistics.mean(cpu):.2f}",
                    f"{1e3 * statistics.median(wall):.2f}",
                    statements,
                    begins,
                    statements + 2 * begins,
                ]
            )
            print(f"{name}: {statements} statements, {begins} transactions per page:")
            for t in texts:
                print("    " + t)
            if args.profile:
                prof = cProfile.Profile(time.process_time)  # CPU, not wall: a busy machine
                prof.enable()
                for _ in range(args.profile):
                    await _feed(client, token)
                prof.disable()
                split[name] = profile_split(prof, args.profile)
            async with engine.connect() as conn:
                viewer_id = (
                    await conn.execute(
                        text("SELECT id FROM users WHERE username = :u"), {"u": name}
                    )
                ).scalar_one()
            post_ids = [
                uuid.UUID(
                    __import__("base64")
                    .b64decode(e["node"]["id"] + "==")
                    .decode()
                    .partition(":")[2]
                )
                for e in doc["data"]["viewer"]["feed"]["edges"]
            ]
            old, new = await hydration_ratio(engine, viewer_id, post_ids, args.hydrations)
            hyd_rows.append(
                [
                    name,
                    f"{old:,.0f}",
                    f"{new:,.0f}" if new else "-",
                    f"{old / new:.2f}x" if new else "-",
                ]
            )
    await engine.dispose()
    print()
    print(
        table(
            [
                "viewer",
                "API CPU/req ms (median)",
                "(mean)",
                "wall ms",
                "SQL statements/page",
                "transactions/page",
                "PG round trips/page",
            ],
            rows,
        )
    )
    print()
    print(
        table(
            ["viewer", "hydration: 6 loader reads µs", "one statement µs", "ratio"],
            hyd_rows,
        )
    )
    for name, rows_ in split.items():
        print()
        print(f"CPU by package, {name} (cProfile self time, µs per request):")
        print(table(["package", "µs/req", "share"], rows_))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    return in_process_args(
        "feed_cpu", __doc__, ["sd195", "sd2494"], argv, {"profile": 200, "hydrations": 300}
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with (
        bench_output("feed_cpu", "API CPU per home-feed page"),
        dedicated_redis(args.redis_server) as redis_url,
    ):
        run(lambda: main_async(args, redis_url))
    return 0


if __name__ == "__main__":
    exit_with(main)
