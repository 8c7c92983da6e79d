"""Use case: read a page of the viewer's home feed (docs/design.md "Home feed", Read).

The cached feed merged with followed pull authors' stores, newest first by
``(created_at, id)``; past a source's window, PostgreSQL. ``visible`` drops what the
viewer may not see and the read scans on until the page is full or the feed ends.
When Redis fails, PostgreSQL gives the same order and cursors.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from sqlalchemy.ext.asyncio import AsyncEngine

from domain import metrics
from domain.errors import StoreError
from domain.feed.config import FeedConfig, FeedStores
from domain.feed.ports import RebuildBusyError, Timelines
from domain.feed.sources import (
    author_recent_entries,
    authors_entries_sql,
    followed_pull_authors,
    home_entries_sql,
)
from domain.feed.timelines import Entry

log = logging.getLogger(__name__)

#: Decides, for a batch of candidate entries, which the viewer may see (same order).
Visible = Callable[[Sequence[Entry]], Awaitable[list[bool]]]
#: The pull authors the viewer follows (domain.feed.sources.followed_pull_authors).
PullAuthors = Callable[[], Awaitable[list[uuid.UUID]]]

#: Most candidates per refill round; each round asks twice the last, so N filtered
#: entries cost O(log N) rounds.
_MAX_BATCH = 1024


@dataclass(frozen=True)
class FeedPage:
    """Up to ``first`` visible entries, newest first (fewer only where the feed ends);
    ``has_next`` exact; ``source`` ``redis`` or ``postgres``."""

    entries: list[Entry]
    has_next: bool
    source: Literal["redis", "postgres"]


async def read_home_feed(
    engine: AsyncEngine,
    stores: FeedStores,
    config: FeedConfig,
    viewer_id: uuid.UUID,
    *,
    first: int,
    before: Entry | None,
    visible: Visible,
    pull_authors: PullAuthors | None = None,
) -> FeedPage:
    """The page of ``first`` entries after ``before`` (None: newest); Redis trouble is
    served from PostgreSQL, never raised. ``pull_authors``: the followed pull authors
    (default: a statement of its own)."""
    try:
        source = _RedisSource(engine, stores, config, viewer_id, pull_authors)
        return await _fill(source, first, before, visible, "redis")
    except StoreError as exc:
        log.warning("feed of %s served from PostgreSQL: Redis failed (%r)", viewer_id, exc)
        metrics.current().feed_fallback()
        return await _fill(_SqlSource(engine, viewer_id), first, before, visible, "postgres")


class _Source(Protocol):
    async def candidates(self, before: Entry | None, count: int) -> list[Entry]: ...


async def _fill(
    source: _Source,
    first: int,
    before: Entry | None,
    visible: Visible,
    name: Literal["redis", "postgres"],
) -> FeedPage:
    """Scan candidates after ``before`` until ``first`` + 1 visible ones are found (the
    extra one tells ``has_next``) or the source ends; never gives up midway."""
    kept: list[Entry] = []
    cursor = before
    want = first + 1
    while True:
        batch = await source.candidates(cursor, want)
        if batch:
            flags = await visible(batch)
            kept += [e for e, ok in zip(batch, flags, strict=True) if ok]
        if len(kept) > first:
            return FeedPage(kept[:first], True, name)
        if len(batch) < want:  # the source ended (candidates() fills what it can)
            return FeedPage(kept, False, name)
        cursor = batch[-1]  # past the filtered entries
        want = min(max(first + 1 - len(kept), 2 * want), _MAX_BATCH)


class _SqlSource:
    """Fan-out-on-read from PostgreSQL: the fallback, and the feed past its window."""

    def __init__(self, engine: AsyncEngine, viewer_id: uuid.UUID) -> None:
        self.engine = engine
        self.viewer_id = viewer_id

    async def candidates(self, before: Entry | None, count: int) -> list[Entry]:
        return await home_entries_sql(self.engine, self.viewer_id, before=before, limit=count)


class _RedisSource:
    """The viewer's cached feed merged with followed pull authors' stores:
    ``candidates(before, count)`` is the newest ``count`` before the cursor, exactly (a
    source that runs out of its window hands over to PostgreSQL); fewer means the end.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        stores: FeedStores,
        config: FeedConfig,
        viewer_id: uuid.UUID,
        pull_authors: PullAuthors | None = None,
    ) -> None:
        self.engine = engine
        self.read_pull_authors = pull_authors or (lambda: followed_pull_authors(engine, viewer_id))
        self.stores = stores
        self.config = config
        self.viewer_id = viewer_id
        self.pull_authors: list[uuid.UUID] | None = None
        self.authors_in_sql: list[uuid.UUID] = []  # pull authors read past their store
        self.window_done = False  # past the cached feed: the rest comes from PostgreSQL
        self.sql = _SqlSource(engine, viewer_id)

    async def candidates(self, before: Entry | None, count: int) -> list[Entry]:
        if self.window_done:
            return await self.sql.candidates(before, count)
        if self.pull_authors is None:
            self.pull_authors = await self.read_pull_authors()
        stored = [a for a in self.pull_authors if a not in self.authors_in_sql]
        (feed, feed_whole), *pulled = await self._pages([self.viewer_id], stored, before, count)
        if len(feed) < count and not feed_whole:
            # The cached window ends here: this and every later round, from PostgreSQL.
            self.window_done = True
            return await self.sql.candidates(before, count)
        if not stored and not self.authors_in_sql:  # no pull author: the feed's order
            return feed[:count]
        merged = set(feed)
        for author, (entries, whole) in zip(stored, pulled, strict=True):
            if len(entries) < count and not whole:
                self.authors_in_sql.append(author)  # its store's window ends here
            else:
                merged.update(entries)
        if self.authors_in_sql:
            merged.update(
                await authors_entries_sql(
                    self.engine, self.authors_in_sql, before=before, limit=count
                )
            )
        return sorted(merged, reverse=True)[:count]

    async def _pages(
        self,
        owners: list[uuid.UUID],
        pull_authors: list[uuid.UUID],
        before: Entry | None,
        count: int,
    ) -> list[tuple[list[Entry], bool]]:
        """Read the feed and every pull author's store in one round trip; rebuild what
        is missing (one rebuild per key at a time; if busy, read that part in SQL).
        Each part comes with whether it is whole (read from PostgreSQL: exact to the
        end) rather than a window."""
        feeds, posts = self.stores.feeds, self.stores.author_posts
        wanted = [(feeds, o) for o in owners] + [(posts, a) for a in pull_authors]
        pages = await feeds.read_pages(wanted, before, count, strict=False)
        misses = pages.count(None)
        metrics.current().feed_timelines_read(len(pages) - misses, misses)
        out: list[tuple[list[Entry], bool]] = []
        for (timelines, owner), page in zip(wanted, pages, strict=True):
            if isinstance(page, StoreError):
                if timelines is feeds:
                    raise page  # the viewer's own feed: the whole page from PostgreSQL
                # A pull author's store on a feed store node that is down: as if its
                # window ended here, so that author alone is read from PostgreSQL.
                out.append(([], False))
            elif page is None:
                out.append(await self._rebuilt(timelines, owner, before, count))
            else:
                out.append((page, False))
        return out

    async def _rebuilt(
        self, timelines: Timelines, owner: uuid.UUID, before: Entry | None, count: int
    ) -> tuple[list[Entry], bool]:
        """Rebuild a missing timeline from PostgreSQL, then read its page; while another
        process rebuilds it, read that page from PostgreSQL instead (whole: True)."""
        is_feed = timelines is self.stores.feeds
        limit = self.config.max_len

        async def load() -> list[Entry]:
            # From the primary: what the fan-out skipped must be in the load.
            async with (self.stores.rebuild_engine or self.engine).connect() as conn:
                if is_feed:
                    return await home_entries_sql(conn, owner, before=None, limit=limit)
                return await author_recent_entries(conn, owner, limit=limit)

        try:
            await timelines.rebuild(owner, load)
            metrics.current().feed_rebuilt(timelines.prefix)
            (page,) = await timelines.page([owner], before, count)
            if page is not None:
                return page, False
        except RebuildBusyError:
            pass
        if is_feed:
            return await home_entries_sql(self.engine, owner, before=before, limit=count), True
        async with self.engine.connect() as conn:
            return await author_recent_entries(conn, owner, limit=count, before=before), True
