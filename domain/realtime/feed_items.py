"""Feed-item events to online feed subscribers; work bounded by min(online users, followers)."""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import read_counts
from domain.db import utcnow
from domain.feed.config import FeedConfig
from domain.feed.sources import active_followers_page
from domain.realtime.ports import RealtimePublisher
from domain.visibility.predicates import is_live

log = logging.getLogger("roost.realtime")

#: Online users matched against the follow graph per statement.
MATCH_BATCH = 5_000


class FeedItemNotifier:
    """The fan-out's FeedListener publishing ``feed_item``; failures are logged, never raised."""

    def __init__(self, engine: AsyncEngine, publisher: RealtimePublisher, config: FeedConfig):
        self.engine = engine
        self.publisher = publisher
        self.config = config

    async def entered_feeds(
        self, post_id: uuid.UUID, author_id: uuid.UUID, owners: Sequence[uuid.UUID]
    ) -> None:
        """The post was written to the feeds of ``owners`` (one page of a push)."""
        try:
            await self.publisher.feed_item(post_id, author_id, owners)
        except Exception:
            log.warning("feed items of post %s not published", post_id, exc_info=True)

    async def entered_pull_feeds(self, post_id: uuid.UUID, author_id: uuid.UUID) -> None:
        """The post of a pull author is merged into its followers' feeds at read time."""
        try:
            async with self.engine.connect() as conn:
                counts = await read_counts(conn, [author_id], ["followers"])
            await publish_to_online_followers(
                self.engine,
                self.publisher,
                post_id=post_id,
                author_id=author_id,
                followers=counts[(author_id, "followers")],
                active_since=utcnow() - self.config.active_window,
                batch_size=self.config.batch_size,
            )
        except Exception:
            log.warning("feed items of pull post %s not published", post_id, exc_info=True)


async def publish_to_online_followers(
    engine: AsyncEngine,
    publisher: RealtimePublisher,
    *,
    post_id: uuid.UUID,
    author_id: uuid.UUID,
    followers: int,
    active_since: dt.datetime,
    batch_size: int,
) -> int:
    """Publish a feed item to online followers of ``author_id`` (``followers``: their count); return
    how many. Raises StoreError / DBAPIError."""
    if followers <= 0:
        return 0
    if await publisher.online_count() < followers:
        return await _walk_online(engine, publisher, post_id, author_id)
    sent = 0
    after = None
    while True:
        async with engine.connect() as conn:
            targets, after = await active_followers_page(
                conn, author_id, active_since=active_since, after=after, limit=batch_size
            )
        if targets:
            sent += await publisher.feed_item(post_id, author_id, targets)
        if after is None:
            return sent


_FOLLOWERS_AMONG = text(
    f"""
    SELECT f.follower_id FROM unnest(CAST(:ids AS uuid[])) AS o(id)
    JOIN follows f ON f.follower_id = o.id AND f.followee_id = :author AND {is_live("f")}
    """
)


async def _walk_online(
    engine: AsyncEngine, publisher: RealtimePublisher, post_id: uuid.UUID, author_id: uuid.UUID
) -> int:
    seen: set[uuid.UUID] = set()
    sent = 0
    async for users in publisher.online_users(batch=MATCH_BATCH):
        fresh = [u for u in users if u not in seen]
        seen.update(fresh)
        if not fresh:
            continue
        async with engine.connect() as conn:
            rows = await conn.execute(_FOLLOWERS_AMONG, {"ids": fresh, "author": author_id})
            targets = [r[0] for r in rows]
        if targets:
            sent += await publisher.feed_item(post_id, author_id, targets)
    return sent
