"""The Redis part of an account's purge: its posts out of its followers' cached feeds,
its own timelines gone (README "Account lifecycle", "Home feed")."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import utcnow
from domain.feed.config import FeedConfig, FeedStores
from domain.feed.sources import active_followers_page, author_recent_entries

#: Feed keys times members one removal script may touch: a bound on how long one call
#: keeps Redis busy (about 100,000 ZREMs of an 800-entry set: a few ms per 10,000).
MAX_REMOVALS_PER_CALL = 100_000


async def purge_author_feeds(
    engine: AsyncEngine, stores: FeedStores, config: FeedConfig, author_id: uuid.UUID
) -> int:
    """Remove the author's posts from the cached feed of each of their followers active
    within ``config.active_window`` (the ones fan-out writes to; an idle follower's stale
    feed is rebuilt when they return, as after a post's delete), then delete the
    author's own home feed and recent-posts store; return the feed entries removed.

    The posts are the author's newest ``2 × max_len`` (what the unfollow purge removes:
    older ones have left every feed's window). Followers are paged ``config.batch_size``
    at a time, and each page's removal is split so one script call removes at most
    :data:`MAX_REMOVALS_PER_CALL` members. Idempotent: run it before the follows and
    posts are deleted, so a purge resumed after a crash runs it again whole. Raises
    DBAPIError / RedisError (the job retries).
    """
    async with engine.connect() as conn:
        entries = await author_recent_entries(conn, author_id, limit=config.max_len * 2)
    post_ids = [e.post_id for e in entries]
    removed = 0
    if post_ids:
        per_call = max(1, MAX_REMOVALS_PER_CALL // len(post_ids))
        active_since = utcnow() - config.active_window
        after = None
        while True:
            async with engine.connect() as conn:
                targets, after = await active_followers_page(
                    conn, author_id, active_since=active_since, after=after, limit=config.batch_size
                )
            for i in range(0, len(targets), per_call):
                removed += await stores.feeds.remove_from_many(targets[i : i + per_call], post_ids)
            if after is None:
                break
    await stores.feeds.drop(author_id)
    await stores.author_posts.drop(author_id)
    return removed
