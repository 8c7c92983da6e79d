"""Consumers of follow-graph events that keep cached feeds right (docs/design.md "Home
feed": following merges, unfollowing or blocking removes).

The merge (after a follow) and the purge (after an unfollow or a block) of one
(follower, author) pair commute: each takes a transaction-scoped advisory lock of the
pair, reads whether the follow is live *now*, and acts on that state rather than on the
event that woke it: the merge adds only while the follow is live, the purge removes only
while it is not. Jobs of one pair therefore run one at a time, and the last of them runs
after the last follow change committed and so writes the final state, whatever order
arq ran them in (a late purge can no longer erase a re-follow; a late merge can no
longer undo a later unfollow). See docs/architecture/home-feed.md "Home feed", Graph changes.
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
    """After a follow: add the author's newest ``max_len`` live posts to the follower's
    cached feed (if it exists; a missing one is rebuilt on read), if the follow is still
    live. Pull authors too: their posts also come from their store at read time, but if
    they flip back to push the follower's feed must already hold their older posts.

    Idempotent; returns the number of entries offered (0 when not following any more).
    Raises DBAPIError / StoreError (the job retries).
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
    """After an unfollow or a block: remove the author's posts from the follower's feed
    (and from a rebuild in progress), unless the follower follows the author again by
    now (the re-follow's merge then owns the feed).

    Posts whose fan-out was still queued are not pushed to a follower who no longer
    follows (the fan-out reads live follows); a fan-out page read just before the
    unfollow committed may still land afterwards, and the read drops any post whose
    author the viewer no longer follows. Returns the number of entries removed.
    Raises DBAPIError / StoreError (the job retries).
    """
    async with engine.begin() as conn:
        await advisory_xact_lock(conn, PAIR_LOCK, follower_id, author_id)
        if await follows_now(conn, follower_id, author_id):
            return 0
        entries = await author_recent_entries(conn, author_id, limit=config.max_len * 2)
        return await stores.feeds.remove(follower_id, [e.post_id for e in entries])
