"""Subscription payloads and the per-event reads behind them.

Every event is resolved in a fresh :class:`Context` (``Context.for_event``): new
dataloaders, the viewer verified at connect until the token expires. The subscription
yields a
:class:`SubscriptionEvent` that carries that context with the value, and the schema's
execution context (app.graphql) executes the event's selection set in it, so nothing
is cached across events, and never across users.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar, cast

from graphql import GraphQLError

from domain.errors import StoreError
from domain.notifications.queries import notifications_by_ids
from schema import visibility
from schema.context import Context, Realtime
from schema.notifications.types import Notification
from schema.posts.types import Post
from schema.realtime.types import PostEngagement

log = logging.getLogger("roost.realtime")

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SubscriptionEvent(Generic[T]):
    """What a subscription resolver yields: the value of one event and the context its
    fields resolve in."""

    context: Context
    value: T


def event_stream(events: AsyncGenerator[SubscriptionEvent[T], None]) -> AsyncGenerator[T, None]:
    """``events`` as the stream type a subscription field declares: Strawberry takes the
    field's GraphQL type from ``AsyncGenerator[T, None]``, and the execution context
    (app.graphql) unwraps each :class:`SubscriptionEvent` into its ``value``, resolved in
    the event's ``context``. The one place where the declared and the yielded types part."""
    return cast("AsyncGenerator[T, None]", events)


def realtime_of(ctx: Context) -> Realtime:
    """The process's real-time services, or an error if subscriptions are off (no Redis)."""
    if ctx.realtime is None:
        raise GraphQLError(
            "Subscriptions need Redis (REDIS_URL).", extensions={"code": "SERVICE_UNAVAILABLE"}
        )
    return ctx.realtime


#: Seconds between the attempts at reading one event while a server it needs is down
#: (about 8 s in all): a restart of PostgreSQL keeps the subscription, a longer outage
#: ends it with ``SERVICE_UNAVAILABLE``.
EVENT_RETRY_S = (0.25, 0.5, 1.0, 2.0, 4.0)


async def hydrate(
    ctx: Context, read: Callable[[Context], Awaitable[T | None]]
) -> tuple[Context, T | None]:
    """``read`` of one event in a fresh per-event context (:meth:`Context.for_event`),
    tried again in another while PostgreSQL or Redis is down (:data:`EVENT_RETRY_S`);
    returns that context and what ``read`` returned. Raises the ``SERVICE_UNAVAILABLE``
    GraphQLError once the attempts are spent (the stream then ends with it), and any
    other exception as it is."""
    for delay in (*EVENT_RETRY_S, None):
        event_ctx = ctx.for_event()
        try:
            return event_ctx, await read(event_ctx)
        except GraphQLError:
            raise
        except Exception as exc:
            refusal = realtime_of(ctx).unavailable(exc)
            if refusal is None:
                raise
            if delay is None:
                log.warning("subscription event unread, the stream ends: %s", refusal.message)
                raise refusal from exc
            log.info("subscription event unread (%s: %s), again in %s s", type(exc), exc, delay)
            await asyncio.sleep(delay)
    raise AssertionError("unreachable: the last attempt returns or raises")


async def feed_post(ctx: Context, post_id: uuid.UUID) -> Post | None:
    """The post of a feed-item event if it belongs in the viewer's home feed now: the
    same rule as ``viewer.feed`` (live, active author, no block either way, the viewer's
    own or by someone they follow, so never a private account's post to a non-follower).
    """
    record = await ctx.loaders.post_by_id.load(post_id)
    (ok,) = await visibility.visible_posts(ctx, [record], home_feed=True)
    return Post.from_record(record) if ok and record is not None else None


async def engagement_of(ctx: Context, post_id: uuid.UUID) -> PostEngagement | None:
    """The post and its counts as the viewer sees them (less what blocks hide from
    them, as ``Post.likeCount`` reads them) if the viewer may see it; None otherwise: the
    SQL twin of the rule (domain.visibility.sql) answers many subscribers at once.

    Read through the process's batched reads (one statement per loop turn for every
    subscriber reading then, nothing cached); the dataloaders are left alone (built only
    if the selection needs them: ``post { author }`` does, ``likeCount`` does not)."""
    viewer = ctx.require_viewer()
    snap = await realtime_of(ctx).reads.snapshot(post_id, viewer)
    if snap is None:
        return None
    return PostEngagement(
        post=Post.from_record(snap.post), like_count=snap.likes, comment_count=snap.comments
    )


async def notification_for(ctx: Context, notification_id: uuid.UUID) -> Notification | None:
    """The viewer's notification of an event, read again: None unless it shows to them
    now (schema.visibility: theirs, someone still behind it, its actor listed for them:
    not banned, deleted or on the other side of a block)."""
    ctx.require_viewer()
    async with ctx.engine.connect() as conn:
        record = (await notifications_by_ids(conn, [notification_id])).get(notification_id)
    (ok,) = await visibility.visible_notifications(ctx, [record])
    return Notification.from_record(record) if ok and record is not None else None


async def publish_engagement(ctx: Context, post_id: uuid.UUID) -> None:
    """After a committed like, unlike or comment: tell ``postEngagementChanged``
    subscribers, when the API publishes them (else the worker does from the outbox).
    Best effort, never raises: a lost event is followed by the next one's fresh counts.
    """
    rt = ctx.realtime
    if rt is None or not rt.publish_engagement:
        return
    try:
        await rt.publisher.engagement_changed(post_id)
    except StoreError:
        log.warning("engagement of post %s not published", post_id, exc_info=True)
