""":class:`domain.explore.ports.Trending` on the feed store: hourly Space-Saving buckets
``{ns}:<family>:<hour>`` summed into a pool ``{ns}:<family>``, one hash tag per family
(docs/api/explore.md "Trending posts").
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence

from adapters.feedstore.members import post_id_of
from adapters.feedstore.store import FeedRedis
from adapters.redis_errors import translated
from adapters.resp import Script
from domain.db import utcnow
from domain.explore.config import ExploreConfig
from domain.explore.ports import FAMILIES, Family
from domain.feed.ranking import ms_of

_HOUR_MS = 3_600_000

# Every script's head: KEYS pool, hour stamp, buckets newest first; ARGV hour, size,
# ttl s. Rebuilds the pool when the hour changed.
_REFRESH = """
local function refresh()
    if redis.call('GET', KEYS[2]) == ARGV[1] then return end
    local live = {}
    for i = 3, #KEYS do
        if redis.call('EXISTS', KEYS[i]) == 1 then live[#live + 1] = KEYS[i] end
    end
    if #live > 0 then
        redis.call('ZUNIONSTORE', KEYS[1], #live, unpack(live))
        redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', 0)
        redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(tonumber(ARGV[2]) + 1))
        redis.call('EXPIRE', KEYS[1], ARGV[3])
    else
        redis.call('DEL', KEYS[1])
    end
    redis.call('SET', KEYS[2], ARGV[1], 'EX', ARGV[3])
end
refresh()
"""

# ARGV[4] the post, ARGV[5] +1 or -1, ARGV[6] the bucket's index (1: this hour), ARGV[7]
# the bucket cap. A withdrawal only takes back what its bucket holds.
_BUMP = Script(
    _REFRESH
    + """
local member, delta = ARGV[4], tonumber(ARGV[5])
local bucket = KEYS[2 + tonumber(ARGV[6])]
if delta < 0 and not redis.call('ZSCORE', bucket, member) then return 0 end
if delta > 0 and not redis.call('ZSCORE', bucket, member)
        and redis.call('ZCARD', bucket) >= tonumber(ARGV[7]) then
    -- Space-Saving: a newcomer to a full bucket takes the least engaged post's place
    -- and count, so a post gaining engagement is never starved out of it.
    local low = redis.call('ZRANGE', bucket, 0, 0, 'WITHSCORES')
    redis.call('ZREM', bucket, low[1])
    redis.call('ZADD', bucket, tonumber(low[2]) + delta, member)
else
    local n = tonumber(redis.call('ZINCRBY', bucket, delta, member))
    if n <= 0 then redis.call('ZREM', bucket, member) end
end
if delta > 0 then redis.call('EXPIRE', bucket, ARGV[3]) end
local total = 0
for i = 3, #KEYS do
    local s = redis.call('ZSCORE', KEYS[i], member)
    if s then total = total + tonumber(s) end
end
if total > 0 then
    redis.call('ZADD', KEYS[1], total, member)
    redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(tonumber(ARGV[2]) + 1))
    redis.call('EXPIRE', KEYS[1], ARGV[3])
else
    redis.call('ZREM', KEYS[1], member)
end
return 1
"""
)

# ARGV[4..]: the posts to forget in the pool and every bucket.
_REMOVE = Script(
    """
for i = 1, #KEYS do
    for j = 4, #ARGV do redis.call('ZREM', KEYS[i], ARGV[j]) end
end
return 1
"""
)

# ARGV[4] how many: the top of the pool, with scores.
_TOP = Script(
    _REFRESH
    + """
return redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[4]) - 1, 'WITHSCORES')
"""
)


# ARGV[4..]: posts; their scores in the pool (false where absent).
_COUNTS = Script(
    _REFRESH
    + """
local out = {}
for j = 4, #ARGV do out[j - 3] = redis.call('ZSCORE', KEYS[1], ARGV[j]) end
return out
"""
)


def hour_of(at: dt.datetime) -> int:
    """Hours since the Unix epoch."""
    return ms_of(at) // _HOUR_MS


class RedisTrending:
    """Trending posts; calls raise :class:`~domain.errors.StoreError` on store failure."""

    def __init__(self, store: FeedRedis, config: ExploreConfig) -> None:
        self.store = store
        self.config = config
        self.ttl_s = (config.hours + 1) * 3600

    def pool_key(self, family: Family) -> str:
        """``{<namespace>}:<family>``."""
        return f"{{{self.config.namespace}}}:{family}"

    def keys(self, family: Family, now: dt.datetime) -> list[str]:
        """The pool, its hour stamp, then the window's buckets, newest first."""
        pool, hour = self.pool_key(family), hour_of(now)
        buckets = [f"{pool}:{hour - i}" for i in range(self.config.hours)]
        return [pool, f"{pool}:at", *buckets]

    def _args(self, now: dt.datetime) -> list[int | bytes | str]:
        return [hour_of(now), self.config.size, self.ttl_s]

    async def _change(
        self,
        post_id: uuid.UUID,
        families: Sequence[Family],
        at: dt.datetime,
        now: dt.datetime,
        delta: int,
    ) -> None:
        age = hour_of(now) - hour_of(at)
        if not 0 <= age < self.config.hours:  # outside the window (or from the future)
            if age >= 0:
                return
            age = 0
        calls = [
            _BUMP.call(
                self.keys(f, now),
                [*self._args(now), post_id.bytes, delta, age + 1, self.config.bucket_cap],
            )
            for f in families
        ]
        await self.store.execute(calls)

    @translated
    async def bump(self, post_id: uuid.UUID, kind: str, at: dt.datetime, now: dt.datetime) -> None:
        """Count one engagement in ``all`` (and ``video`` for a video post)."""
        families: tuple[Family, ...] = FAMILIES if kind == "video" else ("all",)
        await self._change(post_id, families, at, now, 1)

    @translated
    async def withdraw(self, post_id: uuid.UUID, at: dt.datetime, now: dt.datetime) -> None:
        """Take back one engagement counted at ``at`` in either family (where counted)."""
        await self._change(post_id, FAMILIES, at, now, -1)

    @translated
    async def remove(self, post_ids: Sequence[uuid.UUID]) -> None:
        """Forget ``post_ids`` in every pool and bucket."""
        if not post_ids:
            return
        now = utcnow()
        members = [p.bytes for p in post_ids]
        await self.store.execute(
            [
                _REMOVE.call(
                    [k for i, k in enumerate(self.keys(f, now)) if i != 1],
                    [*self._args(now), *members],
                )
                for f in FAMILIES
            ]
        )

    @translated
    async def top(
        self, family: Family, count: int, now: dt.datetime
    ) -> list[tuple[uuid.UUID, int]]:
        """Up to ``count`` ``(post id, engagements)``, most engaged first."""
        if count <= 0:
            return []
        (flat,) = await self.store.execute(
            [_TOP.call(self.keys(family, now), [*self._args(now), count])]
        )
        return [(post_id_of(flat[i]), int(float(flat[i + 1]))) for i in range(0, len(flat), 2)]

    @translated
    async def counts(self, post_ids: Sequence[uuid.UUID], now: dt.datetime) -> dict[uuid.UUID, int]:
        """Engagements of ``post_ids`` present in the ``all`` pool."""
        if not post_ids:
            return {}
        ids = list(post_ids)
        (scores,) = await self.store.execute(
            [_COUNTS.call(self.keys("all", now), [*self._args(now), *(p.bytes for p in ids)])]
        )
        return {p: int(float(n)) for p, n in zip(ids, scores, strict=True) if n}
