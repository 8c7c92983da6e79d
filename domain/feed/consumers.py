"""The outbox topics the feed consumes, wired to their use cases."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from domain import metrics
from domain.feed.config import FeedConfig, FeedStores
from domain.feed.fan_out import FeedListener, fan_out_post
from domain.feed.graph_events import merge_author_into_feed, remove_author_from_feed
from domain.feed.remove_post import remove_post_from_feeds
from domain.outbox.process import Handler


def feed_handlers(
    engine: AsyncEngine,
    stores: FeedStores,
    config: FeedConfig,
    listener: FeedListener | None = None,
) -> dict[str, Handler]:
    """Return ``{topic: handler}`` for post.created / post.deleted / follow.created /
    follow.removed / block.created. Every handler is idempotent. ``listener`` hears
    where each new post went (real-time feed items)."""

    def ids(payload: Mapping[str, Any], *names: str) -> list[uuid.UUID]:
        return [uuid.UUID(payload[n]) for n in names]

    async def post_created(p: Mapping[str, Any]) -> None:
        (post_id,) = ids(p, "post_id")
        result = await fan_out_post(engine, stores, config, post_id, listener)
        if result.mode is not None:
            metrics.current().fanout_done(result.lag_seconds, result.feeds_written)

    async def post_deleted(p: Mapping[str, Any]) -> None:
        post_id, author_id = ids(p, "post_id", "author_id")
        await remove_post_from_feeds(engine, stores, config, author_id, post_id)

    async def follow_created(p: Mapping[str, Any]) -> None:
        follower, followee = ids(p, "follower_id", "followee_id")
        await merge_author_into_feed(engine, stores, config, follower, followee)

    async def follow_removed(p: Mapping[str, Any]) -> None:
        follower, followee = ids(p, "follower_id", "followee_id")
        await remove_author_from_feed(engine, stores, config, follower, followee)

    async def block_created(p: Mapping[str, Any]) -> None:
        blocker, blocked = ids(p, "blocker_id", "blocked_id")
        await remove_author_from_feed(engine, stores, config, blocker, blocked)
        await remove_author_from_feed(engine, stores, config, blocked, blocker)

    return {
        "post.created": post_created,
        "post.deleted": post_deleted,
        "follow.created": follow_created,
        "follow.removed": follow_removed,
        "block.created": block_created,
    }
