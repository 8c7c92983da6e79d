"""The payload and result union of the markNotificationsRead mutation."""

from __future__ import annotations

from typing import Annotated

import strawberry

from schema.errors import ValidationError


@strawberry.type(description="The notifications are read; your unread count now.")
class MarkNotificationsReadSuccess:
    unread_notification_count: int


MarkNotificationsReadResult = Annotated[
    MarkNotificationsReadSuccess | ValidationError,
    strawberry.union("MarkNotificationsReadResult"),
]
