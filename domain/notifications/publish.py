"""Publishing notifications for real-time delivery (subscriptions).

The consumers call :meth:`NotificationPublisher.notification_created` after a
notification committed: when it is created, and when a coalesced one changed and is
unread again (the client refetches it by id either way). The subscriptions layer plugs
in an implementation (Redis pub/sub); without one nothing is published. Best effort:
whatever it raises is logged and never fails the job.
"""

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
