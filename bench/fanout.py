"""Fan-out benchmark: one post into 10,000 full follower feeds.

Part 1, Redis only (a dedicated ``redis-server``, see ``bench._support``): 10,000 feed
keys ``feed:{<user>}`` are pre-filled with the sentinel and 800 entries each, as real
feeds look. Then rounds of one new post each, interleaved:

- ``baseline``: a bare redis-py pipeline per page of 1,000 keys, ``ZADD`` +
  ``ZREMRANGEBYRANK`` (trim to 800 + sentinel) + ``EXPIRE`` per key (docs/design.md: ~21k
  feeds/s measured on these machines);
- ``timelines``: ``domain.feed.timelines.Timelines.add(page, [entry])`` per page of
  1,000, one page after the other -- the production path of one fan-out job (one
  script call per page, add-if-exists);
- ``timelines x2``: the same with two pages in flight, as when two fan-out jobs run at
  once (the arq worker runs up to 20): Redis's single core is then the limit.

Follower ids are asyncpg ``UUID`` objects, as the worker reads them from PostgreSQL.
It prints feeds/s (wall clock), client CPU and Redis CPU (``INFO cpu``) per feed, page
times, and the ratio (goal >= 100,000 feeds/s and >= 4x the baseline).

Part 2, end to end on PostgreSQL + Redis: an author with 10,000 active followers (bulk
``INSERT ... SELECT generate_series``) whose feeds hold 800 entries; ``--posts`` posts
are made with ``domain.posts.create_post.create_post(dispatcher=None)`` and each is
fanned out by calling ``domain.feed.fan_out.fan_out_post`` directly; its
``lag_seconds`` (post commit time to the last feed written) gives p50/p95 (goal p95
<= 0.25 s). With the production thresholds an author with 10,000 followers is a
*pull* author (pull at >= 10,000), so this part raises ``pull_threshold`` to
``followers + 1`` to time the largest push fan-out; everything else is the default
``FeedConfig``.

Usage::

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
        python -m bench.fanout [--feeds 10000] [--entries 800] [--rounds 5] [--posts 20]
                               [--redis-server PATH] [--no-e2e]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from asyncpg.pgproto.pgproto import UUID as PgUUID
from redis.asyncio import Redis

from adapters.feedstore.stores import feed_stores
from adapters.feedstore.timelines import RedisTimelines
from app.database import create_engine
from bench._support import (
    add_run_options,
    bench_output,
    bench_parser,
    dedicated_redis,
    exit_with,
    fill_feeds,
    machine,
    make_author,
    postgres_server,
    print_end_load,
    quantile,
    redis_info,
    run,
    server_cpu,
    table,
    throwaway_database,
)
from domain.db import new_id, utcnow
from domain.feed.config import FeedConfig
from domain.feed.fan_out import fan_out_post
from domain.feed.timelines import Entry, score_of
from domain.posts.create_post import create_post

GOAL_RATE = 100_000
GOAL_RATIO = 4.0
GOAL_P95_S = 0.25
PAGE = 1_000  # FeedConfig.batch_size

#: Writes one entry to the feeds of a page of owners; returns how many were written.
Writer = Callable[[Sequence[uuid.UUID], Entry], Awaitable[int]]


def follower_ids(n: int) -> list[uuid.UUID]:
    """``n`` fresh UUIDv7 user ids as the worker gets them from PostgreSQL: asyncpg's
    ``UUID`` (a ``uuid.UUID`` whose ``str()`` is C code, ~5x faster than the stdlib's;
    the feed key is built from it)."""
    return [PgUUID(new_id().bytes) for _ in range(n)]


def production_writer(timelines: RedisTimelines) -> Writer:
    """The production path: ``Timelines.add`` (one script call per page)."""

    async def write(owners: Sequence[uuid.UUID], entry: Entry) -> int:
        return await timelines.add(owners, [entry])

    return write


def pipeline_writer(timelines: RedisTimelines) -> Writer:
    """The baseline: a bare pipeline, ZADD + ZREMRANGEBYRANK + EXPIRE per key."""
    redis, keep, ttl = timelines.redis, timelines.max_len, timelines.ttl_s

    async def write(owners: Sequence[uuid.UUID], entry: Entry) -> int:
        member, score = entry.member, entry.score
        async with redis.pipeline(transaction=False) as pipe:
            for owner in owners:
                key = timelines.key(owner)
                pipe.zadd(key, {member: score})
                pipe.zremrangebyrank(key, 1, -(keep + 1))  # rank 0 is the sentinel
                pipe.expire(key, ttl)
            await pipe.execute()
        return len(owners)

    return write


@dataclass
class Round:
    """One post written to every feed by one variant."""

    variant: str
    feeds: int
    seconds: float
    client_cpu: float
    server_cpu: float
    page_seconds: list[float]

    @property
    def rate(self) -> float:
        """Feeds written per second (wall clock)."""
        return self.feeds / self.seconds


@dataclass(frozen=True)
class Variant:
    """A way of writing a post to the feeds: ``write`` per page, ``inflight`` pages at
    once (1: one page after the other, as one fan-out job does)."""

    name: str
    write: Writer
    inflight: int = 1


async def one_round(
    redis: Redis, variant: Variant, owners: Sequence[uuid.UUID], page: int = PAGE
) -> Round:
    """Write one fresh entry (a new post, newer than everything) to every owner's feed,
    ``page`` owners per call of ``variant.write``, ``variant.inflight`` calls at once."""
    entry = Entry(score_of(utcnow()), new_id())
    pages: list[float] = []
    chunks = [owners[i : i + page] for i in range(0, len(owners), page)]
    todo = iter(chunks)
    written = 0

    async def worker() -> None:
        nonlocal written
        for chunk in todo:  # shared iterator: each page is written once
            tp = time.perf_counter()
            n = await variant.write(chunk, entry)
            pages.append(time.perf_counter() - tp)
            written += n  # not `written += await ...`: that reads `written` before the await

    s0 = await server_cpu(redis)
    c0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(variant.inflight)))
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    s1 = await server_cpu(redis)
    if written != len(owners):
        raise AssertionError(f"{variant.name}: wrote {written} feeds, expected {len(owners)}")
    return Round(variant.name, written, seconds, cpu, s1 - s0, pages)


async def check_feeds(timelines: RedisTimelines, owners: Sequence[uuid.UUID], entries: int) -> None:
    """Every sampled feed still holds the sentinel + ``entries`` entries and a TTL."""
    redis = timelines.redis
    for owner in owners[:: max(1, len(owners) // 50)]:
        key = timelines.key(owner)
        n, ttl = await redis.zcard(key), await redis.ttl(key)
        if n != entries + 1 or ttl <= 0:
            raise AssertionError(f"{key}: {n} members, ttl {ttl}; expected {entries + 1}")


async def measure(
    redis: Redis,
    variants: Sequence[Variant],
    owners: Sequence[uuid.UUID],
    *,
    rounds: int,
    page: int = PAGE,
) -> list[Round]:
    """A warm-up round per variant, then ``rounds`` rounds of each, interleaved."""
    for v in variants:
        await one_round(redis, v, owners, page)
    out = []
    for _ in range(rounds):
        for v in variants:
            out.append(await one_round(redis, v, owners, page))
    return out


def summarize(results: Sequence[Round], variants: Sequence[str]) -> list[list[object]]:
    """One row per variant: median feeds/s, client and Redis CPU µs per feed, the rate
    those alone allow one page at a time (``cpu-bound/s`` = 1 / (client + redis): what
    the wall-clock rate tends to on an idle machine), page p50/max."""
    rows: list[list[object]] = []
    for v in variants:
        rs = [r for r in results if r.variant == v]
        feeds = sum(r.feeds for r in rs)
        pages = [p for r in rs for p in r.page_seconds]
        rows.append(
            [
                v,
                len(rs),
                f"{statistics.median(r.rate for r in rs):,.0f}",
                f"{min(r.rate for r in rs):,.0f}..{max(r.rate for r in rs):,.0f}",
                f"{1e6 * sum(r.client_cpu for r in rs) / feeds:.2f}",
                f"{1e6 * sum(r.server_cpu for r in rs) / feeds:.2f}",
                f"{feeds / sum(r.client_cpu + r.server_cpu for r in rs):,.0f}",
                f"{1e3 * statistics.median(pages):.2f}",
                f"{1e3 * max(pages):.2f}",
            ]
        )
    return rows


HEADER = (
    "variant",
    "rounds",
    "feeds/s",
    "min..max",
    "client µs/feed",
    "redis µs/feed",
    "cpu-bound/s",
    "page p50 ms",
    "page max ms",
)


def median_rate(results: Sequence[Round], variant: str) -> float:
    """Median feeds/s over the rounds of ``variant``."""
    return statistics.median(r.rate for r in results if r.variant == variant)


# --------------------------------------------------------------------------- part 1


async def redis_part(url: str, args: argparse.Namespace) -> bool:
    """Part 1; returns whether both goals were met."""
    redis = Redis.from_url(url)
    try:
        await redis.flushall()
        config = FeedConfig()
        timelines = RedisTimelines(redis, "feed", max_len=config.max_len, ttl=config.ttl)
        owners = follower_ids(args.feeds)
        t0 = time.perf_counter()
        await fill_feeds(redis, [timelines.key(o) for o in owners], args.entries)
        info = await redis.info("memory")
        print(
            f"{await redis_info(redis)}; {args.feeds:,} feeds x {args.entries} entries"
            f" pre-filled in {time.perf_counter() - t0:.1f} s"
            f" (used_memory {int(info['used_memory']) / 2**20:,.0f} MiB);"
            f" encoding {(await redis.object('encoding', timelines.key(owners[0]))).decode()}"
        )
        variants = [
            Variant("baseline", pipeline_writer(timelines)),
            Variant("timelines", production_writer(timelines)),
            Variant("timelines x2", production_writer(timelines), inflight=2),
        ]
        results = await measure(redis, variants, owners, rounds=args.rounds)
        await check_feeds(timelines, owners, args.entries)
        print(table(HEADER, summarize(results, [v.name for v in variants])))
        base, prod = median_rate(results, "baseline"), median_rate(results, "timelines")
        both = median_rate(results, "timelines x2")
        ratio = prod / base
        ok = prod >= GOAL_RATE and ratio >= GOAL_RATIO
        print(
            f"Timelines.add, one page after the other: {prod:,.0f} feeds/s (goal >="
            f" {GOAL_RATE:,}: {'met' if prod >= GOAL_RATE else 'NOT met'});"
            f" baseline pipeline {base:,.0f}; ratio {ratio:.2f}x (goal >= {GOAL_RATIO:.0f}x:"
            f" {'met' if ratio >= GOAL_RATIO else 'NOT met'})"
        )
        print(
            f"Timelines.add, two pages in flight (two fan-out jobs at once): {both:,.0f}"
            f" feeds/s, {both / base:.2f}x the baseline"
        )
        return ok
    finally:
        await redis.aclose()


# --------------------------------------------------------------------------- part 2


async def e2e_part(database_url: str, redis_url: str, args: argparse.Namespace) -> bool:
    """Part 2; returns whether the p95 goal was met."""
    engine = create_engine(database_url, pool_size=4, max_overflow=2)
    redis = Redis.from_url(redis_url)
    try:
        await redis.flushall()
        n = args.feeds
        config = dataclasses.replace(
            FeedConfig(), pull_threshold=max(FeedConfig().pull_threshold, n + 1)
        )
        stores = feed_stores(redis, config)
        t0 = time.perf_counter()
        author, followers = await make_author(engine, n)
        await fill_feeds(redis, [stores.feeds.key(f) for f in followers], args.entries)
        print(
            f"end to end: author with {n:,} active followers, feeds of {args.entries} entries"
            f" (set up in {time.perf_counter() - t0:.1f} s); pull_threshold"
            f" {config.pull_threshold:,} (production {FeedConfig().pull_threshold:,}),"
            f" batch {config.batch_size:,}"
        )
        lags: list[float] = []
        calls: list[float] = []
        for i in range(args.posts + 2):
            post = await create_post(
                engine, author, caption=f"bench post {i}", counter_shards=16, dispatcher=None
            )
            t = time.perf_counter()
            result = await fan_out_post(engine, stores, config, post.id)
            took = time.perf_counter() - t
            if result.mode != "push" or result.feeds_written != n:
                raise AssertionError(f"unexpected fan-out: {result}")
            if i >= 2:  # two warm-up posts
                lags.append(result.lag_seconds)
                calls.append(took)
        rows = [
            [
                "lag (commit -> last feed)",
                len(lags),
                f"{1e3 * quantile(lags, 0.5):.1f}",
                f"{1e3 * quantile(lags, 0.95):.1f}",
                f"{1e3 * max(lags):.1f}",
            ],
            [
                "fan_out_post call",
                len(calls),
                f"{1e3 * quantile(calls, 0.5):.1f}",
                f"{1e3 * quantile(calls, 0.95):.1f}",
                f"{1e3 * max(calls):.1f}",
            ],
        ]
        print(table(("end to end", "posts", "p50 ms", "p95 ms", "max ms"), rows))
        p95 = quantile(lags, 0.95)
        ok = p95 <= GOAL_P95_S
        print(
            f"fan_out_post p95 lag {p95:.3f} s for {n:,} feeds (goal <= {GOAL_P95_S} s:"
            f" {'met' if ok else 'NOT met'}); {n / quantile(calls, 0.5):,.0f} feeds/s"
            " end to end at the median"
        )
        return ok
    finally:
        await redis.aclose()
        await engine.dispose()


# ------------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line (see the module docstring)."""
    p = bench_parser("fanout", __doc__)
    add_run_options(p, feeds=10_000, entries=800, rounds=5, redis_server=True, loop=True)
    p.add_argument("--posts", type=int, default=20, help="end-to-end posts (default 20)")
    p.add_argument("--no-e2e", action="store_true", help="skip part 2 (PostgreSQL)")
    args = p.parse_args(argv)
    if min(args.feeds, args.entries, args.rounds, args.posts) < 1:
        p.error("--feeds, --entries, --rounds and --posts must be >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run part 1 and (unless --no-e2e) part 2; exit 0 whatever the figures (no timed
    asserts); 1 only when a correctness check failed."""
    args = parse_args(argv)
    with bench_output("fanout", "fanout: one post into full feeds"):
        print(f"{machine()}, loop {args.loop}")
        with dedicated_redis(args.redis_server) as redis_url:
            run(lambda: redis_part(redis_url, args), args.loop)
            if not args.no_e2e:
                with postgres_server() as server, throwaway_database(server) as url:
                    run(lambda: e2e_part(url, redis_url, args), args.loop)
        print_end_load("every wall figure")
    return 0


if __name__ == "__main__":
    exit_with(main)
