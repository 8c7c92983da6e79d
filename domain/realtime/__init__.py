"""Real-time events (docs/api/subscriptions.md): writers PUBLISH small id-only JSON events
on ``rt:user:{<user id>}`` and ``rt:post:{<post id>}``; each API process's hub (behind
:class:`~.ports.Subscriptions`) hands them to its subscribers, which re-read what the
ids point to through the viewer's visibility rule. ``rt:online`` holds the users with an
open ``feedItemAdded`` subscription, the only ones fan-out publishes to.
"""

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
