"""Notification mutations: markNotificationsRead."""

from __future__ import annotations

import strawberry

from domain.notifications.mark_read import mark_notifications_read
from schema.context import Info
from schema.errors import typed_errors
from schema.ids import decode_global_id
from schema.notifications.inputs import MarkNotificationsReadInput
from schema.notifications.results import MarkNotificationsReadResult, MarkNotificationsReadSuccess


@strawberry.type
class NotificationMutations:
    @strawberry.mutation(
        description="Mark notifications read (all of yours when `ids` is omitted or empty). "
        "Idempotent."
    )
    @typed_errors
    async def mark_notifications_read(
        self, info: Info, input: MarkNotificationsReadInput
    ) -> MarkNotificationsReadResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        raw = input.ids or []
        ids = [decode_global_id(i, "Notification", "ids") for i in raw]
        unread = await ctx.mutate(mark_notifications_read, viewer, ids or None)
        return MarkNotificationsReadSuccess(unread_notification_count=unread)
