"""Real-time events (docs/api/subscriptions.md): id-only JSON on ``rt:user:{id}`` and
``rt:post:{id}``, re-read by subscribers through the visibility rule; ``rt:online`` holds feed
subscribers."""

from domain.realtime.channels import (
    ENGAGEMENT,
    FEED_ITEM,
    NOTIFICATION,
    ONLINE_KEY,
    decode_event,
    post_channel,
    user_channel,
)
from domain.realtime.ports import (
    HubClosedError,
    RealtimePublisher,
    Subscription,
    Subscriptions,
)

__all__ = [
    "ENGAGEMENT",
    "FEED_ITEM",
    "NOTIFICATION",
    "ONLINE_KEY",
    "HubClosedError",
    "RealtimePublisher",
    "Subscription",
    "Subscriptions",
    "decode_event",
    "post_channel",
    "user_channel",
]
