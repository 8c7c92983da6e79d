"""The Redis timeline store on a real Redis and on a Redis Cluster: trimming,
add-if-exists, rebuild swap."""

from __future__ import annotations

import datetime as dt
import uuid

from adapters.feedstore.timelines import RedisTimelines
from domain.db import new_id
from domain.feed.timelines import SENTINEL, Entry, sentinel_parts, sentinel_score


def _entries(n: int) -> list[Entry]:
    base = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    return [Entry.of(base + dt.timedelta(seconds=i), new_id()) for i in range(n)]


async def test_add_trims_to_max_len_and_skips_missing_timelines(feed):
    redis = feed.redis.client
    tl = RedisTimelines(
        feed.redis, f"tltest{uuid.uuid4().hex[:6]}", max_len=20, ttl=dt.timedelta(days=1)
    )
    owner, missing = uuid.uuid4(), uuid.uuid4()
    try:
        await tl.create_empty([owner])
        entries = _entries(35)
        assert await tl.add([owner, missing], entries[:25]) == 1  # only the existing one
        for e in entries[25:]:
            await tl.add([owner], [e])
        assert await redis.zcard(tl.key(owner)) == 21  # 20 entries + the sentinel
        assert not await redis.exists(tl.key(missing))
        (page,) = await tl.page([owner], None, 50)
        assert page == sorted(entries, reverse=True)[:20]
        assert await redis.ttl(tl.key(owner)) > 0
    finally:
        await redis.delete(tl.key(owner))


async def test_rebuild_keeps_entries_added_meanwhile_and_trims(feed):
    redis = feed.redis.client
    tl = RedisTimelines(
        feed.redis, f"tltest{uuid.uuid4().hex[:6]}", max_len=20, ttl=dt.timedelta(days=1)
    )
    owner = uuid.uuid4()
    entries = _entries(30)
    try:

        async def load():
            # A writer adds the newest entry while PostgreSQL is being read.
            assert await tl.add([owner], [entries[-1]]) == 1
            return entries[:-1]

        assert await tl.rebuild(owner, load)
        (page,) = await tl.page([owner], None, 50)
        assert page == sorted(entries, reverse=True)[:20]
        assert not await redis.exists(tl.key(owner) + ":build")
        assert not await redis.exists(tl.key(owner) + ":lock")
    finally:
        await redis.delete(tl.key(owner))


def _timelines(feed, max_len: int = 20) -> RedisTimelines:
    return RedisTimelines(
        feed.redis, f"tltest{uuid.uuid4().hex[:6]}", max_len=max_len, ttl=dt.timedelta(days=1)
    )


async def _held(tl: RedisTimelines, owner: uuid.UUID) -> list[Entry]:
    (page,) = await tl.page([owner], None, 100)
    assert page is not None
    return page


async def _whole(tl: RedisTimelines, owner: uuid.UUID) -> bool:
    score = await tl.redis.zscore(tl.key(owner), SENTINEL)
    return sentinel_parts(score)[1]


async def test_every_add_keeps_older_entries_out_of_a_window_that_is_not_whole(feed):
    """A window shortened by removals takes no entry older than its oldest one, whoever
    adds it (a merge, a backlog, a late fan-out: all are ``add``); a whole one takes
    them all until a trim cuts, after which it is a window too."""
    tl = _timelines(feed)
    owner, other = uuid.uuid4(), uuid.uuid4()
    old, mid, new = _entries(3), _entries(30)[3:25], _entries(40)[30:]
    try:
        # Rebuilt from max_len posts: a window from mid[2] up, not whole.
        assert await tl.rebuild(owner, lambda: _const(mid[2:]))
        assert not await _whole(tl, owner)
        await tl.remove(owner, [mid[-1].post_id, mid[-2].post_id])  # 18 left
        assert await tl.add([owner], [*old, mid[1], *new[:2]]) == 1
        held = await _held(tl, owner)
        # Older than the oldest (mid[2]) stays out; newer goes in.
        assert held == sorted([*mid[2:-2], *new[:2]], reverse=True)
        # Emptied by removals, a window bounds nothing: dropped at the next add.
        await tl.remove(owner, [e.post_id for e in held])
        assert await tl.add([owner], [new[2]]) == 0
        assert not await tl.redis.exists(tl.key(owner))

        # Rebuilt from fewer than max_len posts: whole, so older entries are welcome ...
        assert await tl.rebuild(other, lambda: _const(mid[10:]))
        assert await _whole(tl, other)
        assert await tl.add([other], old) == 1
        assert await _held(tl, other) == sorted([*mid[10:], *old], reverse=True)
        # ... until a trim cuts: from then on a window.
        assert await tl.add([other], new) == 1
        assert not await _whole(tl, other)
        assert await _held(tl, other) == sorted([*mid, *old, *new], reverse=True)[:20]
    finally:
        await tl.redis.delete(tl.key(owner), tl.key(other))


async def test_a_rebuild_of_max_len_keeps_what_writers_added_below_it_out(feed):
    tl = _timelines(feed)
    owner = uuid.uuid4()
    entries = _entries(30)
    try:

        async def load():
            # A merge lands in the rebuild meanwhile, with posts older than the load.
            assert await tl.add([owner], entries[:5]) == 1
            return sorted(entries[10:], reverse=True)

        assert await tl.rebuild(owner, load)
        assert not await _whole(tl, owner)
        assert await _held(tl, owner) == sorted(entries[10:], reverse=True)
    finally:
        await tl.redis.delete(tl.key(owner))


async def test_a_timeline_of_another_server_run_reads_as_missing(feed):
    """Its writes may be lost (a restart from an older snapshot, a failover): a read
    takes it for missing, and a rebuild stamps it with the run that answers."""
    tl = _timelines(feed)
    owner = uuid.uuid4()
    entries = _entries(5)
    try:
        assert await tl.rebuild(owner, lambda: _const(entries))
        assert await _held(tl, owner) == sorted(entries, reverse=True)
        run, whole = sentinel_parts(await tl.redis.zscore(tl.key(owner), SENTINEL))
        await tl.redis.zadd(tl.key(owner), {SENTINEL: sentinel_score(run ^ 1, whole=whole)})
        assert await tl.page([owner], None, 10) == [None]
        assert await tl.rebuild(owner, lambda: _const(entries[1:]))
        assert await _held(tl, owner) == sorted(entries[1:], reverse=True)
    finally:
        await tl.redis.delete(tl.key(owner))


async def _const(entries: list[Entry]) -> list[Entry]:
    return entries
