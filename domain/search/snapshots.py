"""The port of frozen ranked lists (at most ``SearchConfig.max_results``) that keeps a ranked
connection's pages stable, found by owner, kind and fingerprint."""

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
    """Saves and slices frozen lists; raises :class:`domain.errors.StoreError` on failure."""

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
        """Entries ``[offset, offset + n)``, or None when gone."""
        ...
