"""domain/feed/read_feed.py's page loop over a fake source and a fake visibility check:
a page is full unless the feed ends, ``has_next`` is exact, and a long run of entries the
viewer may not see costs O(log n) rounds, never an empty page with more to come."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence

import pytest

from domain.feed.read_feed import _fill
from domain.feed.timelines import Entry

BASE = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)


class FakeSource:
    """The newest ``count`` entries before a cursor, from a list (``rising``: the oldest
    ``count`` newer than it, oldest first); records each ask."""

    def __init__(self, entries: list[Entry], *, rising: bool = False) -> None:
        self.entries = sorted(entries, reverse=True)
        self.rising = rising
        self.asks: list[int] = []

    async def candidates(self, before: Entry | None, count: int) -> list[Entry]:
        self.asks.append(count)
        if self.rising:
            newer = [e for e in self.entries[::-1] if before is None or e > before]
            return newer[:count]
        older = [e for e in self.entries if before is None or e < before]
        return older[:count]


def feed(n: int) -> list[Entry]:
    return [Entry.of(BASE + dt.timedelta(seconds=i), uuid.UUID(int=i + 1)) for i in range(n)]


def hidden(ids: set[int]):
    async def visible(batch: Sequence[Entry]) -> list[bool]:
        return [e.post_id.int not in ids for e in batch]

    return visible


async def everything(batch: Sequence[Entry]) -> list[bool]:
    return [True] * len(batch)


async def test_pages_walk_the_feed_once_newest_first() -> None:
    entries = feed(23)
    source = FakeSource(entries)
    seen: list[Entry] = []
    before = None
    while True:
        page = await _fill(source, 5, before, everything, "redis")
        seen += page.entries
        if not page.has_next:
            break
        assert len(page.entries) == 5
        before = page.entries[-1]
    assert seen == sorted(entries, reverse=True)


@pytest.mark.parametrize("n", [0, 4, 5, 6])
async def test_has_next_is_exact_at_the_end(n: int) -> None:
    page = await _fill(FakeSource(feed(n)), 5, None, everything, "redis")
    assert len(page.entries) == min(n, 5)
    assert page.has_next is (n > 5)


async def test_a_run_of_hidden_entries_never_makes_an_empty_page() -> None:
    entries = feed(1_000)
    newest_first = sorted(entries, reverse=True)
    blocked = {e.post_id.int for e in newest_first[:990]}  # only the 10 oldest are visible
    source = FakeSource(entries)
    page = await _fill(source, 5, None, hidden(blocked), "redis")
    assert page.entries == newest_first[990:995] and page.has_next
    assert len(source.asks) <= 12  # 6, 12, 24, … up to 1024 per round: logarithmic


async def test_hidden_entries_at_the_end_leave_has_next_false() -> None:
    entries = feed(12)
    newest_first = sorted(entries, reverse=True)
    page = await _fill(
        FakeSource(entries), 5, None, hidden({e.post_id.int for e in newest_first[5:]}), "redis"
    )
    assert page.entries == newest_first[:5] and page.has_next is False
    assert page.source == "redis"


@pytest.mark.parametrize("size", [1, 4, 5, 7])
async def test_rising_pages_walk_the_feed_back_each_newest_first(size: int) -> None:
    entries = feed(23)
    newest_first = sorted(entries, reverse=True)
    gone = {e.post_id.int for e in newest_first[3:9]} | {newest_first[-1].post_id.int}
    visible = [e for e in newest_first if e.post_id.int not in gone]
    source = FakeSource(entries, rising=True)
    pages: list[list[Entry]] = []
    bound = None
    while True:
        page = await _fill(source, size, bound, hidden(gone), "redis", rising=True)
        assert page.entries == sorted(page.entries, reverse=True)
        pages.insert(0, page.entries)
        if not page.has_next:
            break
        assert len(page.entries) == size
        bound = page.entries[0]
    assert [e for p in pages for e in p] == visible
