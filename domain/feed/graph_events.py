"""Consumers of follow-graph and post events that keep cached feeds right
(design.md "Home feed": following merges, unfollowing or blocking removes)."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.feed.config import FeedConfig, FeedStores
from domain.feed.sources import author_modes, author_recent_entries


async def merge_author_into_feed(
    engine: AsyncEngine,
    stores: FeedStores,
    config: FeedConfig,
    follower_id: uuid.UUID,
    author_id: uuid.UUID,
) -> int:
    """After a follow: add the author's recent posts to the follower's cached feed (if it
    exists; a missing one is rebuilt on read). Pull authors are skipped: their posts are
    merged at read time. Idempotent; returns the number of entries offered."""
    async with engine.connect() as conn:
        if (await author_modes(conn, [author_id]))[author_id] == "pull":
            return 0
        entries = await author_recent_entries(conn, author_id, limit=config.max_len)
    await stores.feeds.add([follower_id], entries)
    return len(entries)


async def remove_author_from_feed(
    engine: AsyncEngine,
    stores: FeedStores,
    config: FeedConfig,
    follower_id: uuid.UUID,
    author_id: uuid.UUID,
) -> int:
    """After an unfollow or a block: remove the author's posts from the follower's feed.

    Posts whose fan-out was still queued may land after this runs; the read path drops
    any post whose author the viewer no longer follows, so they are never shown.
    """
    async with engine.connect() as conn:
        entries = await author_recent_entries(conn, author_id, limit=config.max_len * 2)
    return await stores.feeds.remove(follower_id, [e.post_id for e in entries])


async def remove_post_from_caches(
    stores: FeedStores, author_id: uuid.UUID, post_id: uuid.UUID
) -> None:
    """After a delete: drop the post from the author's stores (other feeds drop it on
    read, when hydration finds it deleted)."""
    await stores.author_posts.remove(author_id, [post_id])
    await stores.feeds.remove(author_id, [post_id])
