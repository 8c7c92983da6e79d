"""Follow-graph consumers of cached feeds (docs/architecture/home-feed.md "Home feed"). Merge and
purge of a pair commute: each takes the pair's advisory lock and acts on whether the follow is
live now."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.feed.config import FeedConfig, FeedStores
from domain.feed.sources import author_recent_entries, follows_now
from domain.locks import advisory_xact_lock

#: Advisory-lock namespace of the feed jobs of one (follower, author) pair.
PAIR_LOCK = "feed-pair"


async def merge_author_into_feed(
    engine: AsyncEngine,
    stores: FeedStores,
    config: FeedConfig,
    follower_id: uuid.UUID,
    author_id: uuid.UUID,
) -> int:
    """After a live follow: add the author's newest ``max_len`` posts to the follower's feed if
    cached. Idempotent; returns the entries offered; raises DBAPIError / StoreError."""
    async with engine.begin() as conn:
        await advisory_xact_lock(conn, PAIR_LOCK, follower_id, author_id)
        if not await follows_now(conn, follower_id, author_id):
            return 0  # unfollowed (or blocked) since: that event's purge owns the feed
        entries = await author_recent_entries(conn, author_id, limit=config.max_len)
        await stores.feeds.add([follower_id], entries)  # under the lock
    return len(entries)


async def remove_author_from_feed(
    engine: AsyncEngine,
    stores: FeedStores,
    config: FeedConfig,
    follower_id: uuid.UUID,
    author_id: uuid.UUID,
) -> int:
    """After an unfollow or block, unless followed again: remove the author's posts from the
    follower's feed and rebuild. Returns entries removed; raises DBAPIError / StoreError."""
    async with engine.begin() as conn:
        await advisory_xact_lock(conn, PAIR_LOCK, follower_id, author_id)
        if await follows_now(conn, follower_id, author_id):
            return 0
        entries = await author_recent_entries(conn, author_id, limit=config.max_len * 2)
        return await stores.feeds.remove(follower_id, [e.post_id for e in entries])
