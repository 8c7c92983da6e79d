"""After-commit delivery of notifications: publish for real time, push to devices."""

from __future__ import annotations

import asyncio
import logging
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.notifications.publish import NoopPublisher, NotificationPublisher
from domain.notifications.push import PushMessage, PushSender, push_text
from domain.notifications.queries import NotificationRecord
from domain.notifications.store import Changes

log = logging.getLogger("roost.notifications")

#: Seconds the real-time publishing of one delivery may take before it is abandoned.
DELIVERY_TIMEOUT_S = 2.0
#: Seconds its pushes may take, under the job's time limit (JOB_TIMEOUT_S).
PUSH_TIMEOUT_S = 4.0


class Delivery:
    """Publishes (``timeout`` s) then pushes (``push_timeout`` s) what a use case committed; never
    raises. ``push`` / ``publisher`` None: skipped."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        push: PushSender | None = None,
        publisher: NotificationPublisher | None = None,
        timeout: float = DELIVERY_TIMEOUT_S,
        push_timeout: float = PUSH_TIMEOUT_S,
    ) -> None:
        self.engine = engine
        self.push = push
        self.publisher = publisher or NoopPublisher()
        self.timeout = timeout
        self.push_timeout = push_timeout

    async def deliver(self, changes: Changes) -> None:
        """Publish created and updated notifications, then push the created ones; never raises."""
        if not changes:
            return
        try:
            async with asyncio.timeout(self.timeout):
                await self._publish(changes)
        except Exception:
            log.warning("notification publishing failed", exc_info=True)
        if self.push is None or not changes.created:
            return
        try:
            async with asyncio.timeout(self.push_timeout):
                await self._push(changes)
        except Exception:
            log.warning("notification push failed", exc_info=True)

    async def _publish(self, changes: Changes) -> None:
        for n in [*changes.created, *changes.updated]:
            try:
                await self.publisher.notification_created(n.recipient_id, n.id)
            except Exception:
                log.warning("publishing notification %s failed", n.id, exc_info=True)

    async def _push(self, changes: Changes) -> None:
        push = self.push
        assert push is not None

        async def one(message: PushMessage) -> None:
            try:
                await push.send(message)
            except Exception:
                log.warning(
                    "push of notification %s failed", message.notification_id, exc_info=True
                )

        await asyncio.gather(*(one(m) for m in await self._messages(changes.created)))

    async def _messages(self, created: list[NotificationRecord]) -> list[PushMessage]:
        actors = list({n.actor_id for n in created if n.actor_id})
        comments = list({n.comment_id for n in created if n.comment_id})
        names: dict[uuid.UUID, str] = {}
        bodies: dict[uuid.UUID, str] = {}
        if actors or comments:
            async with self.engine.connect() as conn:
                names = await _lookup(conn, "SELECT id, username FROM users", actors)
                bodies = await _lookup(conn, "SELECT id, body FROM comments", comments)
        return [
            PushMessage(
                recipient_id=n.recipient_id,
                notification_id=n.id,
                kind=n.kind,
                body=push_text(
                    n.kind,
                    names.get(n.actor_id) if n.actor_id else None,
                    n.count,
                    bodies.get(n.comment_id) if n.comment_id else None,
                ),
                data=_data(n),
            )
            for n in created
        ]


async def _lookup(conn: AsyncConnection, select: str, ids: list[uuid.UUID]) -> dict[uuid.UUID, str]:
    if not ids:
        return {}
    rows = await conn.execute(text(f"{select} WHERE id = ANY(CAST(:ids AS uuid[]))"), {"ids": ids})
    return {row[0]: row[1] for row in rows}


def _data(n: NotificationRecord) -> dict[str, str]:
    data = {"notification_id": str(n.id)}
    if n.post_id:
        data["post_id"] = str(n.post_id)
    return data
