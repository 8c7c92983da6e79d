"""Real-time ports: :class:`RealtimePublisher` (writers) and :class:`Subscriptions`
(subscribers)."""

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
        """The next event (decoded by :func:`domain.realtime.channels.decode_event`), waiting for
        one; raises HubClosedError once the hub stopped."""
        ...

    def pending(self) -> list[dict[str, Any]]:
        """Every queued event, without waiting (``[]`` if none)."""
        ...


class Subscriptions(Protocol):
    """This process's channel subscriptions."""

    def subscribe(
        self,
        channel: str,
        *,
        types: Iterable[str] | None = None,
        presence: uuid.UUID | None = None,
    ) -> AbstractAsyncContextManager[Subscription]:
        """``async with subs.subscribe(channel) as sub``: ``channel``'s events (of ``types``),
        entered once live; ``presence`` marks the user online meanwhile. Raises HubClosedError,
        TimeoutError (unconfirmed) or RedisError (presence)."""
        ...


class RealtimePublisher(Protocol):
    """Publishes id-only events, best effort; every method raises :class:`~domain.errors.StoreError`
    on failure."""

    async def feed_item(
        self, post_id: uuid.UUID, author_id: uuid.UUID, recipients: Sequence[uuid.UUID]
    ) -> int:
        """Tell online ``recipients`` that ``post_id`` entered their feed; return how many."""
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
        """Users with an open feed subscription, about ``batch`` at a time (a user may come
        twice)."""
        ...
