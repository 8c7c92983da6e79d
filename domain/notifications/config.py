"""The notification knobs (issue item 5, "Notifications")."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


@dataclass(frozen=True)
class NotificationConfig:
    """Caps and windows; durations are timedeltas.

    ``follow_daily_cap``: per recipient and UTC day, the first this many followers each
    get a notification; the rest arrive the next day as one digest ("N people followed
    you"). ``like_window``: likes of a post within this time of the first one coalesce
    into one notification. ``max_mentions``: ``@usernames`` looked at per text.
    ``source_retention``: how long the per-event records of follows and likes are kept.
    ``counter_shards``: K of the sharded unread counter.
    """

    follow_daily_cap: int = 20
    like_window: dt.timedelta = dt.timedelta(minutes=10)
    max_mentions: int = 20
    source_retention: dt.timedelta = dt.timedelta(days=7)
    counter_shards: int = 16
