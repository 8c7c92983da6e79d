"""Frozen ranked lists, the port that keeps a ranked connection's pages stable: the list
ranked on the first page (at most ``SearchConfig.max_results``) is kept a few minutes and
sliced by the next pages; found only by owner, kind and fingerprint (the query).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from domain.search.ranking import Ranked


@dataclass(frozen=True, slots=True)
class Slice:
    """Entries ``[offset, offset + n)`` of a frozen list, and how long the list is."""

    entries: list[Ranked]
    total: int


class RankedSnapshots(Protocol):
    """Saves and slices frozen ranked lists; each call raises
    :class:`domain.errors.StoreError` when the store fails (the caller ranks again
    from PostgreSQL)."""

    async def save(
        self, owner: str | None, kind: str, fingerprint: str, entries: list[Ranked]
    ) -> str:
        """Store ``entries`` (in rank order) for the TTL; return the new snapshot's id."""
        ...

    async def slice(
        self,
        owner: str | None,
        kind: str,
        fingerprint: str,
        snapshot_id: str,
        offset: int,
        n: int,
    ) -> Slice | None:
        """Entries ``[offset, offset + n)`` of a snapshot, or None when it is gone
        (expired, or never made for this owner, kind and fingerprint)."""
        ...
