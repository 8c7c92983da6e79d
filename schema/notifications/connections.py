"""``viewer.notifications`` and ``viewer.unreadNotificationCount``."""

from __future__ import annotations

import uuid

from domain.notifications.queries import notifications_page, unread_notification_count
from schema import visibility
from schema.context import Info
from schema.notifications.types import Notification, NotificationConnection, NotificationEdge
from schema.pagination import Window, cursor_encoder, window_info


async def notifications_connection(
    info: Info, recipient_id: uuid.UUID, window: Window
) -> NotificationConnection:
    """``viewer.notifications``: keyset pages on (created_at, id), newest first; actors,
    posts and comments resolve through the request's dataloaders (constant queries)."""
    ctx = info.context
    of = ("notifications", recipient_id)
    async with ctx.engine.connect() as conn:
        records, has_next = await notifications_page(
            conn, recipient_id, first=window.size, after=window.position, backward=window.backward
        )
    ok = await visibility.visible_notifications(ctx, records)
    encode = cursor_encoder(of)
    edges = [
        NotificationEdge(cursor=encode(r.position), node=Notification.from_record(r))
        for r, keep in zip(records, ok, strict=True)
        if keep
    ]
    return NotificationConnection(
        edges=edges,
        page_info=window_info([e.cursor for e in edges], has_next, window),
    )


async def unread_count(info: Info, recipient_id: uuid.UUID) -> int:
    """``viewer.unreadNotificationCount``: exact, a sum of at most K counter rows."""
    async with info.context.engine.connect() as conn:
        return await unread_notification_count(conn, recipient_id)
