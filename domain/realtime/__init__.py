"""Real-time events: Redis pub/sub channels, the publisher, and the port of the hub.

Writers (the fan-out job, the notification and engagement use cases) PUBLISH small
JSON events that carry ids only; every API process runs one hub (the adapter
:class:`app.realtime.hub.Hub`, behind the port :class:`~.ports.Subscriptions`) that
holds a single Redis pub/sub connection, subscribes the channels its open GraphQL
subscriptions need, and hands each message to their queues. The subscriber re-reads
what the ids point to, through fresh dataloaders and the viewer's visibility rules, so
an event never carries data that its recipient may not see.

Channels carry a ``{id}`` hash tag like the feed keys: ``rt:user:{<user id>}`` (feed
items and notifications of one user) and ``rt:post:{<post id>}`` (engagement of one
post). ``rt:online`` is the presence registry: the users with an open
``feedItemAdded`` subscription somewhere, so fan-out publishes only to them.

Modules: ``channels`` (names, event encoding), ``ports`` (``RealtimePublisher``, what
writers publish through, on Redis in adapters.feedstore.publisher; what subscribers
use of the hub: ``Subscriptions``, ``Subscription``, ``HubClosedError``; the hub
itself, the per-process multiplexer and presence heartbeat, and its Redis pub/sub
links live in app/realtime/),
``feed_items`` (the fan-out's listener: push pages and pull authors' online
followers), ``queries`` (the batched per-subscriber engagement read), ``consumers``
(outbox handlers publishing engagement changes).
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
