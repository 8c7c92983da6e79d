"""The trending-posts port (``adapters.feedstore.trending``; docs/api/explore.md "Explore"):
families ``all`` and ``video``; every method raises :class:`domain.errors.StoreError`."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from typing import Literal, Protocol

Family = Literal["all", "video"]
FAMILIES: tuple[Family, ...] = ("all", "video")


class Trending(Protocol):
    """Engagement counts over the trending window; pools trimmed to ``size``, buckets to
    ``bucket_cap``."""

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
        """Engagements of ``post_ids`` in the ``all`` pool (others absent)."""
        ...
