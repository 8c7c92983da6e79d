"""The ports of real-time events: :class:`RealtimePublisher` (what writers publish
through; adapters.feedstore.publisher) and :class:`Subscriptions` (what subscriptions
listen through; app.realtime.hub.Hub).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol


class HubClosedError(Exception):
    """The hub stopped (the process is shutting down): subscriptions end."""


class Subscription(Protocol):
    """One local subscriber of one channel: the events that reach it, in order."""

    async def get(self) -> dict[str, Any]:
        """The next event (``{"type": ..., <ids>}``, decoded by
        :func:`domain.realtime.channels.decode_event`); waits for one. Raises
        HubClosedError once the hub stopped."""
        ...

    def pending(self) -> list[dict[str, Any]]:
        """Take every event already queued, without waiting (an empty list if none): lets
        a subscriber coalesce a burst into one read."""
        ...


class Subscriptions(Protocol):
    """Channel subscriptions of this process (the adapter shares one Redis pub/sub
    connection among them)."""

    def subscribe(
        self,
        channel: str,
        *,
        types: Iterable[str] | None = None,
        presence: uuid.UUID | None = None,
    ) -> AbstractAsyncContextManager[Subscription]:
        """``async with subs.subscribe(channel) as sub``: the events of ``channel`` (of
        ``types``, if given), entered once live; with ``presence`` that user counts as
        online meanwhile. Raises HubClosedError, TimeoutError (not confirmed) or
        RedisError (presence write).
        """
        ...


class RealtimePublisher(Protocol):
    """Publishes id-only events (subscribers re-read and re-check what they point to);
    best effort. Every method raises :class:`~domain.errors.StoreError` when the store
    fails; callers that must not fail on it (use cases after their commit) catch it."""

    async def feed_item(
        self, post_id: uuid.UUID, author_id: uuid.UUID, recipients: Sequence[uuid.UUID]
    ) -> int:
        """Tell the ``recipients`` with an open feed subscription that ``post_id``
        entered their feed; return how many were told."""
        ...

    async def notification_created(
        self, recipient_id: uuid.UUID, notification_id: uuid.UUID
    ) -> None:
        """Tell ``recipient_id``'s subscriptions that a notification was created."""
        ...

    async def engagement_changed(self, post_id: uuid.UUID) -> None:
        """Tell subscribers of ``post_id`` that its likes or comments changed."""
        ...

    async def online_count(self) -> int:
        """How many users have an open feed subscription now."""
        ...

    def online_users(self, *, batch: int = 5_000) -> AsyncIterator[list[uuid.UUID]]:
        """The users with an open feed subscription, about ``batch`` at a time (a user
        may come twice)."""
        ...
