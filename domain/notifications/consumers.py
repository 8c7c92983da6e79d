"""The notifications' outbox consumer (an unfollow never notifies)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.notifications.comments import notify_comment, notify_post_mentions
from domain.notifications.config import NotificationConfig
from domain.notifications.delivery import Delivery
from domain.notifications.follows import (
    notify_follow,
    notify_follow_request,
    notify_follow_request_approved,
)
from domain.notifications.likes import notify_like, withdraw_like
from domain.notifications.post_processed import notify_post_processed
from domain.notifications.store import Changes, EventRef
from domain.outbox.events import (
    CommentCreated,
    FollowCreated,
    FollowRequestApproved,
    FollowRequestCreated,
    LikeCreated,
    LikeRemoved,
    PostCreated,
    PostEdited,
    PostProcessed,
)
from domain.outbox.process import Consumer, Handler


def notification_consumer(
    engine: AsyncEngine, config: NotificationConfig, delivery: Delivery
) -> Consumer:
    """The ``notifications`` consumer; handlers are idempotent per event id, and ``delivery``
    publishes and pushes after the commit."""

    def handler(use_case: Callable[..., Awaitable[Changes]], *names: str) -> Handler:
        async def handle(event: Any, event_id: uuid.UUID) -> None:
            ids = [getattr(event, n) for n in names]
            changes = await use_case(engine, config, EventRef.of(event_id), *ids)
            await delivery.deliver(changes)

        return handle

    return {
        FollowCreated: handler(notify_follow, "follower_id", "followee_id"),
        FollowRequestCreated: handler(notify_follow_request, "requester_id", "target_id"),
        FollowRequestApproved: handler(notify_follow_request_approved, "requester_id", "target_id"),
        LikeCreated: handler(notify_like, "post_id", "user_id"),
        LikeRemoved: handler(withdraw_like, "post_id", "user_id"),
        CommentCreated: handler(notify_comment, "comment_id"),
        PostCreated: handler(notify_post_mentions, "post_id"),
        PostEdited: handler(notify_post_mentions, "post_id"),  # the mentions it adds
        PostProcessed: handler(notify_post_processed, "post_id", "author_id", "state"),
    }
