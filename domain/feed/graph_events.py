"""Consumers of follow-graph events that keep cached feeds right
(docs/architecture/home-feed.md "Home feed", Graph changes). The merge (after a follow)
and the purge (after an unfollow or a block) of one pair commute: each takes the pair's
advisory lock and acts on whether the follow is live *now*, so the last job writes the
final state whatever order they ran in.
"""

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
    """After a follow still live: add the author's newest ``max_len`` live posts to the
    follower's cached feed if it exists (pull authors too, should they flip to push).
    Idempotent; returns the entries offered. Raises DBAPIError / StoreError.
    """
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
    """After an unfollow or a block, unless followed again by now: remove the author's
    posts from the follower's feed and any rebuild in progress. Returns the entries
    removed. Raises DBAPIError / StoreError.
    """
    async with engine.begin() as conn:
        await advisory_xact_lock(conn, PAIR_LOCK, follower_id, author_id)
        if await follows_now(conn, follower_id, author_id):
            return 0
        entries = await author_recent_entries(conn, author_id, limit=config.max_len * 2)
        return await stores.feeds.remove(follower_id, [e.post_id for e in entries])
