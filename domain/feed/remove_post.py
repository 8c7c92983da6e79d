"""Use case: take a deleted post out of every cached timeline (docs/architecture/home-feed.md "Home
feed", Deletes)."""

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
    """Remove ``post_id`` from the author's stores and active followers' feeds. Idempotent; returns
    entries removed; raises DBAPIError / StoreError after every reachable feed."""
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
