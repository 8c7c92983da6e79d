"""Publishing notifications for subscriptions, best effort, after a create or unread-again."""

from __future__ import annotations

import uuid
from typing import Protocol


class NotificationPublisher(Protocol):
    """Announces that ``notification_id`` of ``recipient_id`` is new (or changed)."""

    async def notification_created(
        self, recipient_id: uuid.UUID, notification_id: uuid.UUID
    ) -> None: ...


class NoopPublisher:
    """The default: publishes nothing."""

    async def notification_created(
        self, recipient_id: uuid.UUID, notification_id: uuid.UUID
    ) -> None:
        """Do nothing."""
        return None
