"""The port a GraphQL subscription listens through: what schema/ and resolvers/ (and the
WebSocket session watch) use of the per-process hub.

The adapter is :class:`app.realtime.hub.Hub`, one Redis pub/sub connection per process,
built by the composition root (app/asgi.py through app/container.py); schema/ and
resolvers/ see only these protocols and :class:`HubClosedError`, so they never import
``app``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
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
        """``async with subs.subscribe(channel) as sub``: receive the events of
        ``channel`` (only those whose ``type`` is in ``types``, if given) while the
        context is open; it is entered once the subscription is live, so an event
        published after that is received. With ``presence``, that user counts as online
        (fan-out publishes feed items to them) until the context closes.

        Raises HubClosedError if the hub is closed, TimeoutError if the subscription is
        not confirmed in time, RedisError if the presence write fails.
        """
        ...
