"""The outbox topics notifications consume, wired to their use cases.

``follow.removed`` (unfollow) is not consumed: an unfollow never notifies.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.notifications.comments import notify_comment, notify_post_mentions
from domain.notifications.config import NotificationConfig
from domain.notifications.delivery import Delivery
from domain.notifications.follows import notify_follow, notify_follow_request
from domain.notifications.likes import notify_like, withdraw_like
from domain.notifications.publish import NotificationPublisher
from domain.notifications.push import PushSender
from domain.notifications.store import Changes, EventRef
from domain.outbox.process import Handler


def notification_handlers(
    engine: AsyncEngine,
    config: NotificationConfig,
    *,
    push: PushSender | None = None,
    publisher: NotificationPublisher | None = None,
) -> dict[str, Handler]:
    """Return ``{topic: handler}`` for follow.created, follow_request.created,
    like.created, like.removed (the liker leaves the like notification), comment.created
    and post.created (caption mentions).

    Each handler needs the event id that :func:`domain.outbox.process.process_event`
    adds to the payload, is idempotent per event (a job that runs twice creates
    nothing twice), and after its commit publishes and pushes what it created (best
    effort; ``push``/``publisher`` None: none). post.created and follow.created are
    also the feed's topics: merge both maps with
    :func:`domain.outbox.process.compose_handlers`.
    """
    delivery = Delivery(engine, push=push, publisher=publisher)

    def handler(use_case: Callable[..., Awaitable[Changes]], *names: str) -> Handler:
        async def handle(p: Mapping[str, Any]) -> None:
            ids = [uuid.UUID(p[n]) for n in names]
            changes = await use_case(engine, config, EventRef.from_payload(p), *ids)
            await delivery.deliver(changes)

        return handle

    return {
        "follow.created": handler(notify_follow, "follower_id", "followee_id"),
        "follow_request.created": handler(notify_follow_request, "requester_id", "target_id"),
        "like.created": handler(notify_like, "post_id", "user_id"),
        "like.removed": handler(withdraw_like, "post_id", "user_id"),
        "comment.created": handler(notify_comment, "comment_id"),
        "post.created": handler(notify_post_mentions, "post_id"),
    }
