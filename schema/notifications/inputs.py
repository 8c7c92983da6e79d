"""The input of the markNotificationsRead mutation."""

from __future__ import annotations

import strawberry


@strawberry.input
class MarkNotificationsReadInput:
    ids: list[strawberry.ID] | None = strawberry.field(
        default=None,
        description="Notification ids to mark read; omitted or empty: all of yours. Ids "
        "that are not your notifications are ignored.",
    )
