"""In-memory fakes of domain's feed ports (domain.feed.ports), for unit tests of the
feed's logic without Redis. Each keeps the port's contract (a timeline that does not
exist reads as None, writers never create one, ``max_len`` is kept, reads are newest
first and strictly before the cursor); ``failing = True`` makes every call raise
:class:`domain.errors.StoreError`, as an adapter does when its server is down.
Integration tests run the same logic on the Redis adapters (adapters.feedstore).
"""

from __future__ import annotations

import datetime as dt
import secrets
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import StoreError
from domain.feed.config import FeedConfig, FeedStores
from domain.feed.ports import Engagement, Rising, Timelines, Window
from domain.feed.ranking import Signals
from domain.feed.timelines import Entry


class _Failing:
    failing = False

    def _check(self) -> None:
        if self.failing:
            raise StoreError("fake store down")


class FakeTimelines(_Failing):
    """:class:`domain.feed.ports.Timelines` in a dict: owner -> entries, newest first."""

    def __init__(self, prefix: str = "feed", max_len: int = 800) -> None:
        self.prefix = prefix
        self.max_len = max_len
        self.rows: dict[uuid.UUID, list[Entry]] = {}
        self.rebuilds: list[uuid.UUID] = []

    def key(self, owner: uuid.UUID) -> str:
        return f"{self.prefix}:{{{owner}}}"

    def put(self, owner: uuid.UUID, entries: Sequence[Entry]) -> None:
        """Test set-up: the owner's timeline exists with ``entries``."""
        self.rows[owner] = sorted(set(entries), reverse=True)[: self.max_len]

    async def add(self, owners: Sequence[uuid.UUID], entries: Sequence[Entry]) -> int:
        self._check()
        written = 0
        for owner in owners:
            if owner in self.rows:
                self.put(owner, [*self.rows[owner], *entries])
                written += 1
        return written

    async def remove(self, owner: uuid.UUID, post_ids: Sequence[uuid.UUID]) -> int:
        return await self.remove_from_many([owner], post_ids)

    async def remove_from_many(
        self, owners: Sequence[uuid.UUID], post_ids: Sequence[uuid.UUID]
    ) -> int:
        self._check()
        gone, removed = set(post_ids), 0
        for owner in owners:
            if owner in self.rows:
                kept = [e for e in self.rows[owner] if e.post_id not in gone]
                removed += len(self.rows[owner]) - len(kept)
                self.rows[owner] = kept
        return removed

    async def page(
        self, owners: Sequence[uuid.UUID], before: Entry | None, count: int
    ) -> list[list[Entry] | None]:
        self._check()
        return [self._page(o, before, count) for o in owners]

    def _page(self, owner: uuid.UUID, before: Entry | None, count: int) -> list[Entry] | None:
        if owner not in self.rows:
            return None
        return [e for e in self.rows[owner] if before is None or e < before][:count]

    async def read_pages(
        self,
        wanted: Sequence[tuple[Timelines, uuid.UUID]],
        before: Entry | None,
        count: int,
        *,
        strict: bool = True,
    ) -> list[list[Entry] | StoreError | None]:
        out: list[list[Entry] | StoreError | None] = []
        for timelines, owner in wanted:
            assert isinstance(timelines, FakeTimelines)
            if timelines.failing:
                if strict:
                    raise StoreError("fake store down")
                out.append(StoreError("fake store down"))
            else:
                out.append(timelines._page(owner, before, count))
        return out

    async def read_rising(
        self,
        wanted: Sequence[tuple[Timelines, uuid.UUID]],
        after: Entry | None,
        count: int,
        *,
        strict: bool = True,
    ) -> list[Rising | StoreError | None]:
        out: list[Rising | StoreError | None] = []
        for timelines, owner in wanted:
            assert isinstance(timelines, FakeTimelines)
            if timelines.failing:
                if strict:
                    raise StoreError("fake store down")
                out.append(StoreError("fake store down"))
            elif owner not in timelines.rows:
                out.append(None)
            else:  # whole while shorter than max_len, else a window from its oldest up
                rows = timelines.rows[owner]
                newer = sorted(e for e in rows if after is None or e > after)
                exact = len(rows) < timelines.max_len or (after is not None and after >= rows[-1])
                out.append(Rising(newer[:count], exact))
        return out

    async def exists(self, owner: uuid.UUID) -> bool:
        self._check()
        return owner in self.rows

    async def drop(self, owner: uuid.UUID) -> None:
        await self.drop_many([owner])

    async def drop_many(self, owners: Sequence[uuid.UUID], *, with_builds: bool = True) -> int:
        self._check()
        return sum(self.rows.pop(o, None) is not None for o in owners)

    async def rebuild(
        self, owner: uuid.UUID, load: Callable[[], Awaitable[Sequence[Entry]]]
    ) -> bool:
        self._check()
        self.rebuilds.append(owner)
        self.put(owner, await load())
        return True


class FakeRankingSignals(_Failing):
    """:class:`domain.feed.ports.RankingSignals`: ``read`` answers ``signals``."""

    def __init__(self, signals: Signals | None = None) -> None:
        self.signals = signals or Signals()
        self.recorded: list[Engagement] = []
        self.reads = 0

    async def record(self, e: Engagement, *, now: dt.datetime) -> bool:
        self._check()
        new = e not in self.recorded
        self.recorded.append(e)
        return new

    async def withdraw(self, post_id: uuid.UUID, ref: str) -> dt.datetime | None:
        self._check()
        gone = [e for e in self.recorded if (e.post_id, e.ref) == (post_id, ref)]
        self.recorded = [e for e in self.recorded if (e.post_id, e.ref) != (post_id, ref)]
        return gone[0].at if gone else None

    async def read(
        self, viewer_id: uuid.UUID, authors: Mapping[uuid.UUID, uuid.UUID], now: dt.datetime
    ) -> Signals:
        self._check()
        self.reads += 1
        return self.signals

    async def read_viewer(
        self, viewer_id: uuid.UUID, authors: Iterable[uuid.UUID], now: dt.datetime
    ) -> Signals:
        self._check()
        self.reads += 1
        return self.signals

    async def forget_account(self, user_id: uuid.UUID) -> None:
        self._check()


class FakeRankedWindows(_Failing):
    """:class:`domain.feed.ports.RankedWindows` in a dict keyed by (viewer, window id)."""

    def __init__(self) -> None:
        self.saved: dict[tuple[uuid.UUID, str], Window] = {}

    def new_id(self) -> str:
        return secrets.token_urlsafe(9)

    async def save(self, viewer_id: uuid.UUID, window_id: str, window: Window) -> None:
        self._check()
        self.saved[(viewer_id, window_id)] = window

    async def load(self, viewer_id: uuid.UUID, window_id: str) -> Window | None:
        self._check()
        return self.saved.get((viewer_id, window_id))


class FakeTrending(_Failing):
    """:class:`domain.explore.ports.Trending` as counts per family (no hours, no caps)."""

    def __init__(self) -> None:
        self.counts_of: dict[str, dict[uuid.UUID, int]] = {"all": {}, "video": {}}

    async def bump(self, post_id: uuid.UUID, kind: str, at: dt.datetime, now: dt.datetime) -> None:
        self._check()
        for family in ("all", "video") if kind == "video" else ("all",):
            pool = self.counts_of[family]
            pool[post_id] = pool.get(post_id, 0) + 1

    async def withdraw(self, post_id: uuid.UUID, at: dt.datetime, now: dt.datetime) -> None:
        self._check()
        for pool in self.counts_of.values():
            if post_id in pool:
                pool[post_id] -= 1
                if pool[post_id] <= 0:
                    del pool[post_id]

    async def remove(self, post_ids: Sequence[uuid.UUID]) -> None:
        self._check()
        for pool in self.counts_of.values():
            for p in post_ids:
                pool.pop(p, None)

    async def top(self, family: str, count: int, now: dt.datetime) -> list[tuple[uuid.UUID, int]]:
        self._check()
        ranked = sorted(self.counts_of[family].items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        return ranked[:count]

    async def counts(self, post_ids: Sequence[uuid.UUID], now: dt.datetime) -> dict[uuid.UUID, int]:
        self._check()
        pool = self.counts_of["all"]
        return {p: pool[p] for p in post_ids if p in pool}


class FakeMarks(_Failing):
    """:class:`domain.feed.ports.Marks` in a dict (TTLs are not kept)."""

    def __init__(self) -> None:
        self.records: dict[str, dict[str, str]] = {}

    async def get(self, key: str) -> dict[str, str]:
        self._check()
        return dict(self.records.get(key, {}))

    async def put(self, key: str, fields: Mapping[str, str], ttl_s: int) -> None:
        self._check()
        self.records.setdefault(key, {}).update(fields)

    async def delete(self, key: str) -> None:
        self._check()
        self.records.pop(key, None)


def fake_feed_stores(config: FeedConfig | None = None) -> FeedStores:
    """Every feed port faked, sized by ``config``."""
    max_len = (config or FeedConfig()).max_len
    return FeedStores(
        feeds=FakeTimelines("feed", max_len),
        author_posts=FakeTimelines("posts", max_len),
        signals=FakeRankingSignals(),
        windows=FakeRankedWindows(),
        marks=FakeMarks(),
        trending=FakeTrending(),
    )


class EmptyDatabase:
    """A :class:`domain.reads.RoundTrip` that answers every statement with no rows: a
    PostgreSQL holding no follows and no posts (what a read finds past the faked
    stores). ``statements`` records what was asked."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    async def __call__(self, engine: AsyncEngine, sql: str, *args: Any) -> list[Any]:
        self.statements.append(sql)
        return []
