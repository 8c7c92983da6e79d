"""Paging a ranked list: the first page ranks and freezes, the next slice; without the snapshot,
rank again after the cursor."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from domain.errors import StoreError
from domain.search.ranking import Ranked
from domain.search.snapshots import RankedSnapshots

log = logging.getLogger("roost.search")

#: ``rank(limit, after)``: up to ``limit`` entries in rank order, after ``after``.
Ranker = Callable[[int, Ranked | None], Awaitable[list[Ranked]]]


@dataclass(frozen=True, slots=True)
class Position:
    """Where a page ended: the snapshot (None: live), entries before the next page, and the last
    entry (keyset)."""

    snapshot_id: str | None
    offset: int
    last: Ranked


@dataclass(frozen=True, slots=True)
class RankedPage:
    """A page of entries with the position after each, and whether more follow."""

    entries: list[tuple[Ranked, Position]]
    has_next: bool


@dataclass(frozen=True, slots=True)
class RankedList:
    """What is paged: ``kind``, ``owner`` (None: anonymous), input ``fingerprint`` and ``rank``."""

    kind: str
    owner: str | None
    fingerprint: str
    rank: Ranker


async def ranked_page(
    ranked: RankedList,
    *,
    first: int,
    after: Position | None,
    snapshots: RankedSnapshots | None,
    max_results: int,
) -> RankedPage:
    """The ``first`` entries after ``after`` (None: the start) from the snapshot, or ranked live if
    Redis fails; ends at ``max_results``."""
    start = after.offset if after else 0
    room = max(0, min(first, max_results - start))
    if room == 0:
        return RankedPage([], False)
    if after is None:
        return await _first_page(ranked, room, snapshots, max_results)
    if after.snapshot_id is not None and snapshots is not None:
        try:
            got = await snapshots.slice(
                ranked.owner, ranked.kind, ranked.fingerprint, after.snapshot_id, start, room
            )
        except StoreError:
            log.warning("reading a %s snapshot failed; ranking live", ranked.kind, exc_info=True)
            got = None
        if got is not None:
            return _page(got.entries, after.snapshot_id, start, start + room < got.total)
    found = await ranked.rank(room + 1, after.last)
    within = start + room < max_results
    return _page(found[:room], None, start, len(found) > room and within)


async def _first_page(
    ranked: RankedList, room: int, snapshots: RankedSnapshots | None, max_results: int
) -> RankedPage:
    if snapshots is None:
        found = await ranked.rank(room + 1, None)
        return _page(found[:room], None, 0, len(found) > room and room < max_results)
    entries = await ranked.rank(max_results, None)
    snapshot_id = None
    if len(entries) > room:  # a single page needs no snapshot
        try:
            snapshot_id = await snapshots.save(
                ranked.owner, ranked.kind, ranked.fingerprint, entries
            )
        except StoreError:
            log.warning("saving a %s snapshot failed", ranked.kind, exc_info=True)
    return _page(entries[:room], snapshot_id, 0, len(entries) > room)


def _page(entries: list[Ranked], snapshot_id: str | None, start: int, has_next: bool) -> RankedPage:
    return RankedPage(
        [(e, Position(snapshot_id, start + i + 1, e)) for i, e in enumerate(entries)],
        has_next,
    )
