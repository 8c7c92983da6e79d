"""The port of explore's candidates: the trending posts of the last ``hours`` hours, by
engagement, in the feed store (``adapters.feedstore.trending``; docs/api/explore.md "Explore").

Two families: ``all`` (every post) and ``video`` (posts holding a video, the design's
trending Reels). Every method raises :class:`domain.errors.StoreError` when the store
fails.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from typing import Literal, Protocol

Family = Literal["all", "video"]
FAMILIES: tuple[Family, ...] = ("all", "video")


class Trending(Protocol):
    """Engagement counts of posts over the trending window, bounded in size (the pool of
    each family trimmed to ``size``, each hourly bucket to ``bucket_cap``)."""

    async def bump(self, post_id: uuid.UUID, kind: str, at: dt.datetime, now: dt.datetime) -> None:
        """Count one engagement of the post (of media ``kind``) at ``at``."""
        ...

    async def withdraw(self, post_id: uuid.UUID, at: dt.datetime, now: dt.datetime) -> None:
        """Take back one engagement counted at ``at`` (an unlike, a deleted comment)."""
        ...

    async def remove(self, post_ids: Sequence[uuid.UUID]) -> None:
        """Forget the posts everywhere (deleted, or their author banned or leaving)."""
        ...

    async def top(
        self, family: Family, count: int, now: dt.datetime
    ) -> list[tuple[uuid.UUID, int]]:
        """Up to ``count`` ``(post id, engagements)`` of the family, most engaged first."""
        ...

    async def counts(self, post_ids: Sequence[uuid.UUID], now: dt.datetime) -> dict[uuid.UUID, int]:
        """The engagements of those of ``post_ids`` in the ``all`` pool (others are
        absent)."""
        ...
