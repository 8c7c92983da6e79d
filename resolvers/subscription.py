"""The root Subscription: feedItemAdded, notificationAdded, postEngagementChanged.

Each field checks what it can before the stream starts (a refusal is an ``error``
message, not a stream), then subscribes its channel through the process's hub and
turns each event, re-read and re-checked in a fresh per-event context, into a payload
(read again while PostgreSQL or Redis is down: schema.realtime.events.hydrate).
"""

from __future__ import annotations

import collections
import contextlib
import datetime as dt
import functools
import uuid
from collections.abc import AsyncGenerator

import strawberry
from graphql import GraphQLError

from domain.errors import ValidationError
from domain.realtime import ENGAGEMENT, FEED_ITEM, NOTIFICATION, post_channel, user_channel
from domain.realtime.ports import HubClosedError
from schema.context import Context, Info
from schema.ids import decode_global_id
from schema.notifications.types import Notification
from schema.pagination import encode_cursor
from schema.posts.types import Post, PostEdge
from schema.realtime.events import (
    SubscriptionEvent,
    engagement_of,
    event_stream,
    feed_post,
    hydrate,
    notification_for,
    realtime_of,
)
from schema.realtime.types import PostEngagement

#: Post ids a feed subscription remembers, to drop a repeated event (a fan-out job that
#: ran twice publishes its pages twice).
RECENT_POSTS = 64


def _event_uuid(event: dict, key: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(event[key])
    except (KeyError, TypeError, ValueError):
        return None


@strawberry.type(
    description="Real-time events over WebSocket (graphql-transport-ws, or the legacy"
    ' graphql-ws): send `{"authorization": "Bearer <accessToken>"}` in connection_init.'
)
class Subscription:
    @strawberry.subscription(
        description="Posts entering your home feed as they are fanned out, from the authors"
        " you follow (push and pull) and your own; only posts you may see."
    )
    async def feed_item_added(self, info: Info) -> AsyncGenerator[Post, None]:
        ctx = info.context
        viewer = ctx.require_viewer()
        return event_stream(_feed_items(ctx, viewer))

    @strawberry.subscription(
        description="The posts of feedItemAdded as edges of `viewer.feed`: each with its "
        "cursor in the newest-first (RECENT) feed, so a client prepends it to the "
        "connection it holds (and may page on from it with `after`)."
    )
    async def feed_edge_added(self, info: Info) -> AsyncGenerator[PostEdge, None]:
        ctx = info.context
        viewer = ctx.require_viewer()
        return event_stream(_feed_edges(ctx, viewer))

    @strawberry.subscription(
        description="Your notifications as they are created, and again when a coalesced one"
        " (likes) changes and is unread once more."
    )
    async def notification_added(self, info: Info) -> AsyncGenerator[Notification, None]:
        ctx = info.context
        viewer = ctx.require_viewer()
        return event_stream(_notifications(ctx, viewer))

    @strawberry.subscription(
        description="The like and comment counts of a post you may see, each time they"
        " change or its author edits the caption (a burst of changes may arrive as one event"
        " with the latest state)."
    )
    async def post_engagement_changed(
        self, info: Info, post_id: strawberry.ID
    ) -> AsyncGenerator[PostEngagement, None]:
        ctx = info.context
        ctx.require_viewer()
        try:
            pid = decode_global_id(post_id, "Post", "postId")
        except ValidationError as exc:
            raise GraphQLError(exc.message, extensions={"code": "BAD_USER_INPUT"}) from None
        realtime_of(ctx)
        first = await engagement_of(ctx.for_event(), pid)
        if first is None:
            raise GraphQLError(
                "No post with that id is visible to you.", extensions={"code": "NOT_FOUND"}
            )
        return event_stream(_engagement(ctx, pid, _state(first)))


async def _feed_items(
    ctx: Context, viewer: uuid.UUID
) -> AsyncGenerator[SubscriptionEvent[Post], None]:
    hub = realtime_of(ctx).hub
    recent: collections.deque[uuid.UUID] = collections.deque(maxlen=RECENT_POSTS)
    try:
        async with hub.subscribe(user_channel(viewer), types=[FEED_ITEM], presence=viewer) as sub:
            while True:
                post_id = _event_uuid(await sub.get(), "post_id")
                if post_id is None or post_id in recent:
                    continue
                ctx.for_event().require_viewer()  # an expired token ends the stream
                event_ctx, post = await hydrate(ctx, functools.partial(feed_post, post_id=post_id))
                if post is not None:
                    recent.append(post_id)
                    yield SubscriptionEvent(event_ctx, post)
    except HubClosedError:
        return  # the server is shutting down: the stream completes


async def _feed_edges(
    ctx: Context, viewer: uuid.UUID
) -> AsyncGenerator[SubscriptionEvent[PostEdge], None]:
    """The events of :func:`_feed_items` as edges of the viewer's RECENT feed."""
    of = ("feed", viewer)
    async with contextlib.aclosing(_feed_items(ctx, viewer)) as items:
        async for event in items:
            post = event.value
            cursor = encode_cursor((post.created_at, post.post_id), of)
            yield SubscriptionEvent(event.context, PostEdge(cursor=cursor, node=post))


async def _notifications(
    ctx: Context, viewer: uuid.UUID
) -> AsyncGenerator[SubscriptionEvent[Notification], None]:
    hub = realtime_of(ctx).hub
    try:
        async with hub.subscribe(user_channel(viewer), types=[NOTIFICATION]) as sub:
            while True:
                notification_id = _event_uuid(await sub.get(), "notification_id")
                if notification_id is None:
                    continue
                event_ctx, notification = await hydrate(
                    ctx, functools.partial(notification_for, notification_id=notification_id)
                )
                if notification is not None:
                    yield SubscriptionEvent(event_ctx, notification)
    except HubClosedError:
        return


def _state(out: PostEngagement) -> tuple[int, int, dt.datetime | None]:
    """What a ``postEngagementChanged`` event must change: the counts or the caption."""
    return (out.like_count, out.comment_count, out.post.edited_at)


async def _engagement(
    ctx: Context, post_id: uuid.UUID, last: tuple[int, int, dt.datetime | None]
) -> AsyncGenerator[SubscriptionEvent[PostEngagement], None]:
    hub = realtime_of(ctx).hub
    try:
        async with hub.subscribe(post_channel(post_id), types=[ENGAGEMENT]) as sub:
            while True:
                await sub.get()
                sub.pending()  # one fresh read answers a whole burst
                event_ctx, out = await hydrate(
                    ctx, functools.partial(engagement_of, post_id=post_id)
                )
                if out is None:  # deleted, or no longer visible to the viewer
                    continue
                state = _state(out)
                if state == last:  # nothing new (a like undone, or events merged)
                    continue
                last = state
                yield SubscriptionEvent(event_ctx, out)
    except HubClosedError:
        return
