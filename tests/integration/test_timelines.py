"""The Redis timeline store on a real Redis and on a Redis Cluster: trimming,
add-if-exists, rebuild swap."""

from __future__ import annotations

import datetime as dt
import uuid

from adapters.feedstore.timelines import RedisTimelines
from domain.db import new_id
from domain.feed.timelines import Entry


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
