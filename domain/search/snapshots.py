"""Frozen ranked lists: the port that keeps a ranked connection's pages stable.

A search or suggestion list is ranked once, on its first page, and the whole ranked
list (at most ``SearchConfig.max_results`` entries) is kept for a few minutes; the next
pages are slices of it, so a page never repeats or skips a user while follower counts,
names or the graph change (the same idea as Elasticsearch's point in time). A snapshot
is found only with its owner, kind and fingerprint (the query), so a cursor replayed
against another query finds nothing. ``adapters.search_snapshots`` keeps them in Redis.
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
