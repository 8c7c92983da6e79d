"""The notification knobs (docs/api/notifications.md "Notifications")."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


@dataclass(frozen=True)
class NotificationConfig:
    """``follow_daily_cap`` per recipient and UTC day, ``like_window`` of coalescing,
    ``max_mentions`` per text, ``source_retention``, ``counter_shards`` of the unread counter."""

    follow_daily_cap: int = 20
    like_window: dt.timedelta = dt.timedelta(minutes=10)
    max_mentions: int = 20
    source_retention: dt.timedelta = dt.timedelta(days=7)
    counter_shards: int = 16
