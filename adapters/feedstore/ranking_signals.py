""":class:`domain.feed.ports.RankingSignals` on the feed store: keys ``rank:v|a|p|k``
with TTLs and their owner's ``{id}`` tag (docs/architecture/home-feed.md "Ranked order").
Velocity members are ``l:<liker>`` / ``c:<comment>``, scored by event time (ms).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable, Mapping

from adapters.feedstore.store import FeedRedis
from adapters.redis_errors import translated
from adapters.resp import Call, Script
from domain.feed.ports import Engagement
from domain.feed.ranking import (
    RankingConfig,
    Signals,
    decayed_rate_us,
    ms_of,
    preferred_kind,
)
from domain.feed.timelines.entries import score_of

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def velocity_key(post_id: uuid.UUID) -> str:
    """The post's last-hour engagements (sorted set)."""
    return f"rank:v:{{{post_id}}}"


def author_key(author_id: uuid.UUID) -> str:
    """The author's decayed engagement count (hash ``{r, t}``)."""
    return f"rank:a:{{{author_id}}}"


def close_key(viewer_id: uuid.UUID) -> str:
    """Authors the viewer engaged with in 30 days (sorted set)."""
    return f"rank:p:{{{viewer_id}}}"


def kinds_key(viewer_id: uuid.UUID) -> str:
    """Media kinds of the viewer's last interactions (sorted set)."""
    return f"rank:k:{{{viewer_id}}}"


# KEYS: close, kinds (one viewer). ARGV: author ('' for the viewer's own post), time ms,
# proximity cutoff ms, proximity cap, kinds member, sample, ttl s.
_VIEWER = Script(
    """
    if ARGV[1] ~= '' then
        redis.call('ZADD', KEYS[1], 'GT', ARGV[2], ARGV[1])
        redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3])
        redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(tonumber(ARGV[4]) + 1))
        redis.call('EXPIRE', KEYS[1], ARGV[7])
    end
    redis.call('ZADD', KEYS[2], ARGV[2], ARGV[5])
    redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -(tonumber(ARGV[6]) + 1))
    redis.call('EXPIRE', KEYS[2], ARGV[7])
    return 1
    """
)

# KEYS: the post's velocity set. ARGV: member, time ms, cutoff ms, ttl ms.
# Returns 1 if the member is new (the engagement was not counted before), else 0.
_VELOCITY = Script(
    """
    local added = redis.call('ZADD', KEYS[1], 'NX', ARGV[2], ARGV[1])
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3])
    redis.call('PEXPIRE', KEYS[1], ARGV[4])
    return added
    """
)

# KEYS: the author's hash. ARGV: time ms, horizon ms, ttl s. Adds 1 to the decayed count
# (an event older than the last update adds its decayed weight).
_AUTHOR = Script(
    """
    local now = tonumber(ARGV[1])
    local tau = tonumber(ARGV[2])
    local r = tonumber(redis.call('HGET', KEYS[1], 'r') or '0')
    local t = tonumber(redis.call('HGET', KEYS[1], 't') or ARGV[1])
    if now >= t then
        r = r * math.exp(-(now - t) / tau) + 1
        t = now
    else
        r = r + math.exp(-(t - now) / tau)
    end
    redis.call('HSET', KEYS[1], 'r', string.format('%.17g', r), 't', string.format('%d', t))
    redis.call('EXPIRE', KEYS[1], ARGV[3])
    return 1
    """
)


# KEYS: velocity sets. ARGV: since ms. Each set's count of engagements since then.
_COUNTS = Script(
    """
    local out = {}
    for i, key in ipairs(KEYS) do
        out[i] = redis.call('ZCOUNT', key, ARGV[1], '+inf')
    end
    return out
    """
)

# KEYS: the post's velocity set. ARGV: member. Removes it; returns its time (ms) or nil.
_WITHDRAW = Script(
    """
    local at = redis.call('ZSCORE', KEYS[1], ARGV[1])
    if not at then return nil end
    redis.call('ZREM', KEYS[1], ARGV[1])
    return at
    """
)

# KEYS: author hashes. Their r and t, flat (false where missing).
_RATES = Script(
    """
    local out = {}
    for i, key in ipairs(KEYS) do
        local v = redis.call('HMGET', key, 'r', 't')
        out[2 * i - 1] = v[1]
        out[2 * i] = v[2]
    end
    return out
    """
)


class RedisRankingSignals:
    """Calls raise :class:`~domain.errors.StoreError` when the store fails."""

    def __init__(self, store: FeedRedis, config: RankingConfig) -> None:
        self.store = store
        self.config = config

    @translated
    async def record(self, e: Engagement, *, now: dt.datetime) -> bool:
        """Record one engagement (idempotent); return whether it was new to the post's
        velocity (one older than the window feeds only proximity and preference)."""
        cfg = self.config
        at_ms = ms_of(e.at)
        ttl_s = int(cfg.proximity_window.total_seconds())
        calls = [
            _VIEWER.call(
                [close_key(e.actor), kinds_key(e.actor)],
                [
                    e.author_id.bytes if e.author_id != e.actor else b"",
                    at_ms,
                    ms_of(now - cfg.proximity_window),
                    cfg.proximity_cap,
                    f"{e.kind}:{e.post_id}:{e.ref}",
                    cfg.preference_sample,
                    ttl_s,
                ],
            )
        ]
        window_ms = ms_of(e.at + cfg.velocity_window) - at_ms
        fresh = e.at > now - cfg.velocity_window
        if fresh:
            calls.append(
                _VELOCITY.call(
                    [velocity_key(e.post_id)],
                    [e.ref, at_ms, ms_of(now - cfg.velocity_window), 2 * window_ms],
                )
            )
        replies = await self.store.execute(calls)
        if not fresh or replies[1] != 1:
            return False
        horizon_ms = int(cfg.author_rate_horizon / dt.timedelta(milliseconds=1))
        await self.store.execute(
            [_AUTHOR.call([author_key(e.author_id)], [at_ms, horizon_ms, 4 * horizon_ms // 1000])]
        )
        return True

    @translated
    async def forget_account(self, user_id: uuid.UUID) -> None:
        """Delete a purged account's viewer and author keys (docs/api/account-lifecycle.md
        "Account lifecycle"); velocities expire within their window."""
        keys = (close_key(user_id), kinds_key(user_id), author_key(user_id))
        await self.store.execute([Call.of(keys[0], "DEL", *keys)])

    @translated
    async def withdraw(self, post_id: uuid.UUID, ref: str) -> dt.datetime | None:
        """Take an engagement out of the post's velocity only; return when it was
        counted, or None if not held (too old, or withdrawn already)."""
        key = velocity_key(post_id)
        (at_ms,) = await self.store.execute([_WITHDRAW.call([key], [ref])])
        return None if at_ms is None else _EPOCH + dt.timedelta(milliseconds=int(float(at_ms)))

    @translated
    async def read_viewer(
        self, viewer_id: uuid.UUID, authors: Iterable[uuid.UUID], now: dt.datetime
    ) -> Signals:
        """The viewer's proximity among ``authors`` and preferred kind."""
        cfg = self.config
        close, kinds = close_key(viewer_id), kinds_key(viewer_id)
        replies = await self.store.execute(
            [
                Call.of(close, "ZRANGEBYSCORE", close, ms_of(now - cfg.proximity_window), "+inf"),
                Call.of(kinds, "ZRANGE", kinds, 0, -1),
            ]
        )
        by_bytes = {a.bytes: a for a in authors}
        return Signals(
            close_authors=frozenset(by_bytes[m] for m in replies[0] if m in by_bytes),
            preferred=preferred_kind([m.split(b":", 1)[0].decode() for m in replies[1]], cfg),
        )

    @translated
    async def read(
        self, viewer_id: uuid.UUID, authors: Mapping[uuid.UUID, uuid.UUID], now: dt.datetime
    ) -> Signals:
        """Every signal for the window ``authors`` ({post id: author id}) at ``now``:
        velocities, rates of authors with a velocity, the viewer's proximity and
        preferred kind; one round trip."""
        cfg = self.config
        posts = list(authors)
        writers = list(dict.fromkeys(authors.values()))
        close, kinds = close_key(viewer_id), kinds_key(viewer_id)
        post_keys = [velocity_key(p) for p in posts]
        author_keys = [author_key(a) for a in writers]
        post_groups = self.store.slot_groups(post_keys)
        author_groups = self.store.slot_groups(author_keys)
        replies = await self.store.execute(
            [
                Call.of(close, "ZRANGEBYSCORE", close, ms_of(now - cfg.proximity_window), "+inf"),
                Call.of(kinds, "ZRANGE", kinds, 0, -1),
                *_COUNTS.grouped_calls(
                    post_keys, post_groups, 1, [ms_of(now - cfg.velocity_window)]
                ),
                *_RATES.grouped_calls(author_keys, author_groups, 1, []),
            ]
        )
        counted = 2 + len(post_groups)
        velocity: dict[uuid.UUID, int] = {}
        for (_, owners), counts in zip(post_groups, replies[2:counted], strict=True):
            velocity.update((posts[i], int(n)) for i, n in zip(owners, counts, strict=True) if n)
        engaged = {authors[p] for p in velocity}
        now_us, horizon = score_of(now), cfg.author_rate_horizon // dt.timedelta(microseconds=1)
        rates: dict[uuid.UUID, float] = {}
        for (_, owners), flat in zip(author_groups, replies[counted:], strict=True):
            for j, i in enumerate(owners):
                r, t = flat[2 * j], flat[2 * j + 1]
                # Lua's false (a missing hash) arrives as None.
                if r and t and writers[i] in engaged:
                    rates[writers[i]] = decayed_rate_us(float(r), 1000 * int(t), now_us, horizon)
        by_bytes = {a.bytes: a for a in writers}  # no UUID decoded per member (200)
        return Signals(
            velocity=velocity,
            author_rate=rates,
            close_authors=frozenset(by_bytes[m] for m in replies[0] if m in by_bytes),
            preferred=preferred_kind([m.split(b":", 1)[0].decode() for m in replies[1]], cfg),
        )
