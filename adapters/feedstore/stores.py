"""The feed's stores (:class:`domain.feed.config.FeedStores`) on one feed store."""

from __future__ import annotations

from collections.abc import Mapping

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.feedstore.ranked_windows import RedisRankedWindows
from adapters.feedstore.ranking_signals import RedisRankingSignals
from adapters.feedstore.store import FeedRedis, as_feed_redis
from adapters.feedstore.timelines import RedisTimelines
from adapters.feedstore.trending import RedisTrending
from adapters.redis_errors import translated
from domain.feed.config import FeedConfig, FeedStores


def feed_stores(
    redis: Redis | FeedRedis,
    config: FeedConfig,
    *,
    rebuild_engine: AsyncEngine | None = None,
) -> FeedStores:
    """Every store of the feed on one feed store (binary replies)."""
    store = as_feed_redis(redis)
    return FeedStores(
        feeds=RedisTimelines(store, "feed", max_len=config.max_len, ttl=config.ttl),
        author_posts=RedisTimelines(store, "posts", max_len=config.max_len, ttl=config.ttl),
        signals=RedisRankingSignals(store, config.ranking),
        windows=RedisRankedWindows(store, config.ranking.freeze),
        marks=RedisMarks(store),
        trending=RedisTrending(store, config.explore),
        rebuild_engine=rebuild_engine,
    )


class RedisMarks:
    """:class:`domain.feed.ports.Marks` as Redis hashes (the key names the slot)."""

    def __init__(self, store: FeedRedis) -> None:
        self.redis = store.client

    # redis-py types hash commands "Awaitable[T] | T": hence the [misc] ignores.
    @translated
    async def get(self, key: str) -> dict[str, str]:
        saved = await self.redis.hgetall(key)  # type: ignore[misc]
        return {k.decode(): v.decode() for k, v in saved.items()}

    @translated
    async def put(self, key: str, fields: Mapping[str, str], ttl_s: int) -> None:
        await self.redis.hset(key, mapping=dict(fields))  # type: ignore[misc]
        await self.redis.expire(key, ttl_s)

    @translated
    async def delete(self, key: str) -> None:
        await self.redis.delete(key)
