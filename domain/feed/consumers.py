"""The feed's outbox consumer: the events that change timelines, wired to their use cases."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncEngine

from domain import metrics
from domain.feed.config import FeedConfig, FeedStores
from domain.feed.fan_out import FeedListener, fan_out_post
from domain.feed.graph_events import merge_author_into_feed, remove_author_from_feed
from domain.feed.remove_post import remove_post_from_feeds
from domain.outbox.events import (
    BlockCreated,
    FollowCreated,
    FollowRemoved,
    PostCreated,
    PostDeleted,
)
from domain.outbox.process import Consumer


def feed_consumer(
    engine: AsyncEngine,
    stores: FeedStores,
    config: FeedConfig,
    listener: FeedListener | None = None,
) -> Consumer:
    """The ``feed`` consumer: fan-out, removal, merge and purge, each idempotent."""

    async def post_created(e: PostCreated, _: uuid.UUID) -> None:
        result = await fan_out_post(engine, stores, config, e.post_id, listener)
        if result.mode is not None:
            metrics.current().fanout_done(result.lag_seconds, result.feeds_written)

    async def post_deleted(e: PostDeleted, _: uuid.UUID) -> None:
        await remove_post_from_feeds(engine, stores, config, e.author_id, e.post_id)

    async def follow_created(e: FollowCreated, _: uuid.UUID) -> None:
        await merge_author_into_feed(engine, stores, config, e.follower_id, e.followee_id)

    async def follow_removed(e: FollowRemoved, _: uuid.UUID) -> None:
        await remove_author_from_feed(engine, stores, config, e.follower_id, e.followee_id)

    async def block_created(e: BlockCreated, _: uuid.UUID) -> None:
        await remove_author_from_feed(engine, stores, config, e.blocker_id, e.blocked_id)
        await remove_author_from_feed(engine, stores, config, e.blocked_id, e.blocker_id)

    return {
        PostCreated: post_created,
        PostDeleted: post_deleted,
        FollowCreated: follow_created,
        FollowRemoved: follow_removed,
        BlockCreated: block_created,
    }
