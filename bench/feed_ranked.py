"""Ranked feed benchmark: the ranked home-feed page vs the chronological one, same run.

The data of ``bench.feed_read`` (a viewer following ``--authors`` (500) accounts with
``--posts`` (20) posts each, spread over 10 days) on a throwaway PostgreSQL database
and a dedicated ``redis-server``, one uvicorn process serving ``app.asgi:create_app``.
Ranking signals are written through the consumers' own code
(``RankingSignals.record``): engagements on the newest 400 posts (velocity and author
averages), and the viewer's likes of one post of each of 200 authors (proximity, the
200-entry cap) with their media kinds, so the ranked read finds real signals.

``--clients`` (16) concurrent clients send, in ``--seconds`` (8) segments interleaved
over ``--rounds`` (2) after a warm-up, the same hydrated page query::

    { viewer { feed(first: 20[, after: $c][, order: RANKED]) { edges { cursor node {
      id caption createdAt author { username followerCount followedByViewer } } }
      pageInfo { hasNextPage endCursor } } } }

- ``recent``: the chronological first page;
- ``ranked``: the ranked first page: reads the FEED_RANKED_WINDOW (100) candidate
  window, its signals, ranks and freezes a window, every request;
- ``recent-next`` / ``ranked-next``: the second page (``after`` the first page's end
  cursor: a keyset read, or a slice of the frozen window).

Every response must hold 20 hydrated edges and no errors. It prints req/s and p50/p99
latency per variant and the ratios ranked/recent (throughput, and latency inverted so
that higher is better) for the first and the second page; goal >= 0.8x.

Usage::

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
        python -m bench.feed_ranked [--clients 16] [--seconds 8] [--rounds 2]
                                    [--authors 500] [--posts 20] [--window 100]

``DATABASE_URL`` names a server (a throwaway database is created there); unset, the
embedded PostgreSQL is started. ``REDIS_URL`` is never used.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import random
import uuid
from collections.abc import Sequence

from redis.asyncio import Redis
from sqlalchemy import text

from adapters.feedstore import FeedRedis
from adapters.feedstore.ranking_signals import RedisRankingSignals
from app.database import create_engine
from bench import _support as bs
from domain.feed.ports import Engagement
from domain.feed.ranking import RankingConfig

GOAL_RATIO = 0.8
PAGE = 20
FIELDS = (
    "edges { cursor node { id caption createdAt author { username followerCount"
    " followedByViewer } } } pageInfo { hasNextPage endCursor }"
)


def query(order: str, after: str | None) -> str:
    """The page query of one variant."""
    args = f"first: {PAGE}"
    if after is not None:
        args += f', after: "{after}"'
    if order == "RANKED":
        args += ", order: RANKED"
    return f"{{ viewer {{ feed({args}) {{ {FIELDS} }} }} }}"


async def write_signals(database_url: str, redis_url: str, viewer: uuid.UUID) -> int:
    """Record engagements through ``RankingSignals`` (the consumers' code); return how
    many."""
    engine = create_engine(database_url, pool_size=1, max_overflow=0)
    try:
        async with engine.connect() as conn:
            newest = (
                await conn.execute(
                    text("SELECT id, author_id FROM posts ORDER BY created_at DESC LIMIT 400")
                )
            ).all()
            one_each = (
                await conn.execute(
                    text(
                        "SELECT DISTINCT ON (author_id) id, author_id FROM posts"
                        " ORDER BY author_id, created_at DESC LIMIT 200"
                    )
                )
            ).all()
    finally:
        await engine.dispose()
    store = FeedRedis(Redis.from_url(redis_url))
    signals = RedisRankingSignals(store, RankingConfig())
    now = dt.datetime.now(dt.UTC)
    rng = random.Random(11)
    n = 0
    try:
        for post_id, author in newest:
            for _ in range(rng.randint(0, 3)):
                actor = uuid.uuid4()
                at = now - dt.timedelta(minutes=rng.uniform(0, 55))
                await signals.record(
                    Engagement(actor, post_id, author, "text", f"l:{actor}", at), now=now
                )
                n += 1
        for i, (post_id, author) in enumerate(one_each):
            kind = "video" if i % 3 else "image"
            at = now - dt.timedelta(days=rng.uniform(0, 20))
            await signals.record(
                Engagement(viewer, post_id, author, kind, f"l:{viewer}", at), now=now
            )
            n += 1
    finally:
        await store.aclose()
    return n


def check_page(body: bytes) -> str:
    """The end cursor of a response; AssertionError unless 20 hydrated edges, no errors."""
    doc = json.loads(body)
    if doc.get("errors"):
        raise AssertionError(f"GraphQL errors: {doc['errors'][:2]}")
    feed = doc["data"]["viewer"]["feed"]
    if len(feed["edges"]) != PAGE or not feed["edges"][0]["node"]["author"]["username"]:
        raise AssertionError(f"expected {PAGE} hydrated edges, got {len(feed['edges'])}")
    return feed["pageInfo"]["endCursor"]


async def drive(server: bs.Server, token: str, args: argparse.Namespace) -> None:
    """Check the pages, warm up, run the interleaved segments, print the figures."""
    async with bs.authorized_client(server, token, args.clients) as client:
        bodies: dict[str, bytes] = {}
        firsts: dict[str, list[str]] = {}
        for order, name in (("RECENT", "recent"), ("RANKED", "ranked")):
            r = await client.post("/graphql", json={"query": query(order, None)})
            end = check_page(r.content)
            firsts[name] = [e["node"]["id"] for e in r.json()["data"]["viewer"]["feed"]["edges"]]
            bodies[name] = json.dumps({"query": query(order, None)}).encode()
            bodies[f"{name}-next"] = json.dumps({"query": query(order, end)}).encode()
        moved = sum(a != b for a, b in zip(firsts["recent"], firsts["ranked"], strict=True))
        print(f"the ranked first page differs from the chronological one at {moved}/{PAGE} places")
        variants = ["recent", "ranked", "recent-next", "ranked-next"]
        for v in variants:
            await bs.post_segment(
                server, client, v, bodies[v], args.warmup, args.clients, check_page
            )
        results: list[bs.Segment] = []
        for _ in range(args.rounds):
            for v in variants:
                results.append(
                    await bs.post_segment(
                        server, client, v, bodies[v], args.seconds, args.clients, check_page
                    )
                )
    report(results, variants)


def report(results: Sequence[bs.Segment], variants: Sequence[str]) -> None:
    """One row per variant, then the ranked/recent ratios: throughput, p50 latency
    (inverted, so that higher is better) and the API process's CPU per request
    (inverted; the steadiest of the three on a shared machine)."""
    totals, rows = bs.segment_totals(results, variants)
    print(bs.table(bs.SEGMENT_HEADER, rows))
    for page, (base, ranked) in (
        ("first page", ("recent", "ranked")),
        ("second page", ("recent-next", "ranked-next")),
    ):
        tput = totals[ranked][0] / totals[base][0]
        lat = totals[base][1] / totals[ranked][1]
        cpu = totals[base][2] / totals[ranked][2]
        verdict = "met" if min(tput, lat) >= GOAL_RATIO else "NOT met"
        print(
            f"{page}: ranked/recent throughput ratio {tput:.2f}x, latency ratio (p50 recent"
            f" / p50 ranked) {lat:.2f}x, CPU ratio (recent / ranked per request) {cpu:.2f}x"
            f" (goal >= {GOAL_RATIO}x: {verdict})"
        )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line (see the module docstring)."""
    p = bs.bench_parser("feed_ranked", __doc__)
    bs.add_run_options(
        p, authors=500, posts=20, clients=16, seconds=8.0, rounds=2, warmup=2.0, redis_server=True
    )
    p.add_argument("--window", type=int, default=100, help="FEED_RANKED_WINDOW of the server (100)")
    args = p.parse_args(argv)
    if min(args.clients, args.rounds, args.authors, args.posts) < 1:
        p.error("counts must be >= 1")
    if args.authors * args.posts < 2 * PAGE + 1:
        p.error(f"the feed needs more than {2 * PAGE} posts")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: data, signals, one server, the interleaved segments."""
    args = parse_args(argv)
    with bs.bench_output("feed_ranked", "feed_ranked: ranked vs chronological feed pages"):
        print(
            f"{bs.machine()}; {args.clients} clients,"
            f" {args.rounds} x {args.seconds:.0f} s per variant; viewer follows"
            f" {args.authors} authors x {args.posts} posts; FEED_RANKED_WINDOW={args.window}"
        )
        os.environ["FEED_RANKED_WINDOW"] = str(args.window)  # the server's environment
        with bs.database_and_redis(args.redis_server) as (database_url, redis_url):
            viewer = asyncio.run(bs.make_data(database_url, args.authors, args.posts))
            token = asyncio.run(bs.viewer_token(database_url, viewer))
            n = asyncio.run(write_signals(database_url, redis_url, viewer))
            print(f"{n} engagements recorded as ranking signals")
            with bs.server_process("api", database_url, redis_url) as server:
                bs.run(lambda: drive(server, token, args))
        bs.print_end_load()
    return 0


if __name__ == "__main__":
    bs.exit_with(main)
