"""Use case: take a deleted post out of every cached timeline it may be in (the fan-out
of the removal; docs/architecture/home-feed.md "Home feed", Deletes)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import utcnow
from domain.errors import StoreError
from domain.feed.config import FeedConfig, FeedStores
from domain.feed.sources import active_followers_page


async def remove_post_from_feeds(
    engine: AsyncEngine,
    stores: FeedStores,
    config: FeedConfig,
    author_id: uuid.UUID,
    post_id: uuid.UUID,
) -> int:
    """After ``post_id`` was deleted: remove it from the author's recent-posts store and
    own feed, then from the cached feed of every follower active within
    ``config.active_window``, ``config.batch_size`` followers per Redis round trip, as
    the push wrote it (and from rebuilds in progress, which will not bring it back).

    Whatever the author's mode now: a pull author's post may sit in feeds all the same
    (pushed before a flip, merged by a follow, or loaded by a rebuild). Followers idle
    longer got no pushes and have their feed rebuilt when they return. Idempotent;
    returns how many feed entries were removed. Raises DBAPIError / StoreError (the
    job retries), a StoreError only after every reachable feed was done.
    """
    failures: list[StoreError] = []  # a node down fails its feeds only; raised at the end

    async def attempt(removal: Awaitable[int]) -> int:
        try:
            return await removal
        except StoreError as exc:
            failures.append(exc)
            return 0

    await attempt(stores.author_posts.remove(author_id, [post_id]))
    removed = await attempt(stores.feeds.remove(author_id, [post_id]))
    after = None
    active_since = utcnow() - config.active_window
    while True:
        async with engine.connect() as conn:
            targets, after = await active_followers_page(
                conn, author_id, active_since=active_since, after=after, limit=config.batch_size
            )
        removed += await attempt(stores.feeds.remove_from_many(targets, [post_id]))
        if after is None:
            if failures:
                raise failures[0]
            return removed
