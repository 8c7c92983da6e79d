"""Explore benchmark: the first explore page vs a first home feed page, same run.

The data of ``bench.feed_read`` (a viewer following ``--authors`` (500) accounts with
``--posts`` (20) posts each), of which the viewer then stops following half, so explore
has posts to discover; ``--trending`` (1,000) random posts get 1-40 engagements each
in the trending pool (``RedisTrending.bump``, the consumer's own code) and the ranking
signals of ``bench.feed_ranked`` are written, so explore re-scores with real ones. One
uvicorn process serves ``app.asgi:create_app`` on a throwaway PostgreSQL database and a
dedicated ``redis-server``.

``--clients`` (16) concurrent clients send, in ``--seconds`` (8) segments interleaved
over ``--rounds`` (2) after a warm-up, the same selection on both first pages::

    { viewer { feed(first: 20) { FIELDS } } }   # home
    { explore(first: 20) { FIELDS } }           # explore: ranks and freezes a window

Every response must hold 20 hydrated edges and no errors. It prints req/s, p50/p99
latency and the API process's CPU per request per variant, then the cost of an explore
page as a ratio to a home page (CPU per request, and p50 latency); goal <= 1.2x.

Usage::

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
        python -m bench.explore [--clients 16] [--seconds 8] [--rounds 2]
                                [--authors 500] [--posts 20] [--trending 1000]
                                [--window 100]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import functools
import json
import os
import random
from collections.abc import Sequence

from redis.asyncio import Redis
from sqlalchemy import text

from adapters.feedstore import FeedRedis
from adapters.feedstore.trending import RedisTrending
from app.database import create_engine
from bench import _support as bs
from bench.feed_ranked import FIELDS, PAGE, write_signals
from domain.explore.config import ExploreConfig

GOAL_RATIO = 1.2
QUERIES = {
    "home": f"{{ viewer {{ feed(first: {PAGE}) {{ {FIELDS} }} }} }}",
    "explore": f"{{ explore(first: {PAGE}) {{ {FIELDS} }} }}",
}


async def write_trending(database_url: str, redis_url: str, viewer, n: int) -> int:
    """Unfollow half the authors; give ``n`` random posts engagements in the trending
    pool; return the engagements written."""
    engine = create_engine(database_url, pool_size=1, max_overflow=0)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "UPDATE follows SET deleted_at = now() WHERE follower_id = :v"
                    " AND followee_id IN (SELECT followee_id FROM follows WHERE follower_id = :v"
                    " ORDER BY followee_id LIMIT (SELECT count(*) / 2 FROM follows"
                    " WHERE follower_id = :v))"
                ),
                {"v": viewer},
            )
            ids = (
                await conn.execute(
                    text("SELECT id FROM posts ORDER BY random() LIMIT :n"), {"n": n}
                )
            ).scalars()
            post_ids = list(ids)
    finally:
        await engine.dispose()
    store = FeedRedis(Redis.from_url(redis_url))
    trending = RedisTrending(store, ExploreConfig())
    now = dt.datetime.now(dt.UTC)
    rng = random.Random(5)
    total = 0
    try:
        for post_id in post_ids:
            for _ in range(rng.randint(1, 40)):
                at = now - dt.timedelta(hours=rng.uniform(0, 23))
                await trending.bump(post_id, "text", at, now)
                total += 1
    finally:
        await store.aclose()
    return total


def check(variant: str, body: bytes) -> None:
    """AssertionError unless 20 hydrated edges and no errors."""
    doc = json.loads(body)
    if doc.get("errors"):
        raise AssertionError(f"{variant}: GraphQL errors: {doc['errors'][:2]}")
    data = doc["data"]["viewer"]["feed"] if variant == "home" else doc["data"]["explore"]
    if len(data["edges"]) != PAGE or not data["edges"][0]["node"]["author"]["username"]:
        raise AssertionError(f"{variant}: expected {PAGE} hydrated edges")


async def drive(server: bs.Server, token: str, args: argparse.Namespace) -> None:
    """Warm up, run the interleaved segments, print the figures."""
    bodies = {v: json.dumps({"query": q}).encode() for v, q in QUERIES.items()}
    checks = {v: functools.partial(check, v) for v in QUERIES}
    async with bs.authorized_client(server, token, args.clients) as client:
        for v in QUERIES:
            await bs.post_segment(
                server, client, v, bodies[v], args.warmup, args.clients, checks[v]
            )
        results = [
            await bs.post_segment(
                server, client, v, bodies[v], args.seconds, args.clients, checks[v]
            )
            for _ in range(args.rounds)
            for v in QUERIES
        ]
    totals, rows = bs.segment_totals(results, list(QUERIES))
    print(bs.table(bs.SEGMENT_HEADER, rows))
    cpu = totals["explore"][2] / totals["home"][2]
    p50 = totals["explore"][1] / totals["home"][1]
    tput = totals["home"][0] / totals["explore"][0]
    verdict = "met" if cpu <= GOAL_RATIO else "NOT met"
    print(
        f"first explore page / first home page: CPU per request {cpu:.2f}x, p50 latency"
        f" {p50:.2f}x, 1/throughput {tput:.2f}x (goal <= {GOAL_RATIO}x on CPU: {verdict})"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: data, trending posts and signals, one server, the segments."""
    p = bs.bench_parser("explore", __doc__)
    bs.add_run_options(
        p, authors=500, posts=20, clients=16, seconds=8.0, rounds=2, warmup=2.0, redis_server=True
    )
    p.add_argument("--trending", type=int, default=1000, help="posts given engagement (1000)")
    p.add_argument("--window", type=int, default=100, help="EXPLORE_WINDOW of the server (100)")
    args = p.parse_args(argv)
    with bs.bench_output("explore", "explore: first explore page vs first home feed page"):
        print(
            f"{bs.machine()}; {args.clients} clients,"
            f" {args.rounds} x {args.seconds:.0f} s per variant; {args.authors} authors x"
            f" {args.posts} posts, half followed; {args.trending} trending posts;"
            f" EXPLORE_WINDOW={args.window}"
        )
        os.environ["EXPLORE_WINDOW"] = str(args.window)  # the server's environment
        with bs.database_and_redis(args.redis_server) as (database_url, redis_url):
            viewer = asyncio.run(bs.make_data(database_url, args.authors, args.posts))
            token = asyncio.run(bs.viewer_token(database_url, viewer))
            n = asyncio.run(write_signals(database_url, redis_url, viewer))
            m = asyncio.run(write_trending(database_url, redis_url, viewer, args.trending))
            print(f"{n} ranking signals, {m} trending engagements recorded")
            with bs.server_process("api", database_url, redis_url) as server:
                bs.run(lambda: drive(server, token, args))
        bs.print_end_load()
    return 0


if __name__ == "__main__":
    bs.exit_with(main)
