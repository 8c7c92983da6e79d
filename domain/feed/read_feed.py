"""Use case: read a page of the viewer's home feed (docs/design.md "Home feed", Read): cached feed
merged with pull authors, newest first by ``(created_at, id)``; PostgreSQL past the window or when
Redis fails, same cursors."""

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
from domain.feed.ports import RebuildBusyError, Rising, Timelines
from domain.feed.pull_guesses import PullAuthorGuesses
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
PullAuthors = Callable[[], Awaitable[list[uuid.UUID]]]

#: Most candidates per refill round; each round doubles, so N filtered cost O(log N).
_MAX_BATCH = 1024


@dataclass(frozen=True)
class FeedPage:
    """Up to ``first`` visible entries, newest first (fewer only where the feed ends);
    ``has_next`` exact in the read direction; ``source`` ``redis`` or ``postgres``."""

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
    rising: bool = False,
    guesses: PullAuthorGuesses | None = None,
) -> FeedPage:
    """The ``first`` entries after ``before`` (None: newest), or with ``rising`` just newer than it,
    newest first. Redis trouble falls back to PostgreSQL, never raised. ``pull_authors``
    default: a statement of its own.

    With ``guesses``, the pull authors come from the viewer's last read in this process, checked
    against ``visible.pull_authors`` (the list its last batch read, as a PostFilter hydrating
    ``Wanted.feed_reader`` does; else a statement): a guess that missed one is corrected and
    the page read again with the true list."""
    try:
        guess = guesses.get(viewer_id) if guesses is not None else None
        source = _RedisSource(
            engine, stores, config, viewer_id, pull_authors, rising=rising, guess=guess
        )
        page = await _fill(source, first, before, visible, "redis", rising)
        if guesses is None:
            return page
        if guess is None:  # read by statement: the truth
            if source.pull_authors is not None:
                guesses.put(viewer_id, source.pull_authors)
            return page
        if not source.merged_pull_authors:  # the page never used the guess
            return page
        actual = getattr(visible, "pull_authors", None)
        if actual is None:  # no batch was hydrated
            actual = await source.read_pull_authors()
        if set(actual) != set(guess):
            guesses.put(viewer_id, actual)
        if set(actual) <= set(guess):  # others' posts the filter dropped: the page stands
            return page
        source = _RedisSource(
            engine, stores, config, viewer_id, pull_authors, rising=rising, guess=actual
        )
        return await _fill(source, first, before, visible, "redis", rising)
    except StoreError as exc:
        log.warning("feed of %s served from PostgreSQL: Redis failed (%r)", viewer_id, exc)
        metrics.current().feed_fallback()
        sql = _SqlSource(engine, viewer_id, rising=rising)
        return await _fill(sql, first, before, visible, "postgres", rising)


class _Source(Protocol):
    async def candidates(self, bound: Entry | None, count: int) -> list[Entry]: ...


async def _fill(
    source: _Source,
    first: int,
    bound: Entry | None,
    visible: Visible,
    name: Literal["redis", "postgres"],
    rising: bool = False,
) -> FeedPage:
    """Scan past ``bound`` until ``first`` + 1 visible entries or the source ends."""
    kept: list[Entry] = []
    cursor = bound
    want = first + 1
    while True:
        batch = await source.candidates(cursor, want)
        if batch:
            flags = await visible(batch)
            kept += [e for e, ok in zip(batch, flags, strict=True) if ok]
        if len(kept) > first or len(batch) < want:  # full, or the source ended
            page = kept[:first]
            return FeedPage(page[::-1] if rising else page, len(kept) > first, name)
        cursor = batch[-1]  # past the filtered entries
        want = min(max(first + 1 - len(kept), 2 * want), _MAX_BATCH)


class _SqlSource:
    """Fan-out-on-read from PostgreSQL (fallback and beyond the window)."""

    def __init__(self, engine: AsyncEngine, viewer_id: uuid.UUID, *, rising: bool) -> None:
        self.engine = engine
        self.viewer_id = viewer_id
        self.rising = rising

    async def candidates(self, bound: Entry | None, count: int) -> list[Entry]:
        return await home_entries_sql(
            self.engine, self.viewer_id, before=bound, limit=count, rising=self.rising
        )


class _RedisSource:
    """The cached feed merged with pull authors' stores: ``candidates(bound, count)``, exactly; a
    source past its window hands over to PostgreSQL."""

    def __init__(
        self,
        engine: AsyncEngine,
        stores: FeedStores,
        config: FeedConfig,
        viewer_id: uuid.UUID,
        pull_authors: PullAuthors | None = None,
        *,
        rising: bool = False,
        guess: list[uuid.UUID] | None = None,
    ) -> None:
        self.engine = engine
        self.read_pull_authors = pull_authors or (lambda: followed_pull_authors(engine, viewer_id))
        self.stores = stores
        self.config = config
        self.viewer_id = viewer_id
        self.rising = rising
        self.pull_authors: list[uuid.UUID] | None = guess  # None: read on the first round
        self.merged_pull_authors = False  # a round merged the pull authors' stores
        self.authors_in_sql: list[uuid.UUID] = []  # pull authors read past their store
        self.window_done = False  # past the cached feed: the rest comes from PostgreSQL
        self.sql = _SqlSource(engine, viewer_id, rising=rising)

    async def candidates(self, bound: Entry | None, count: int) -> list[Entry]:
        if self.window_done:
            return await self.sql.candidates(bound, count)
        if self.pull_authors is None:
            self.pull_authors = await self.read_pull_authors()
        stored = [a for a in self.pull_authors if a not in self.authors_in_sql]
        (feed, feed_exact), *pulled = await self._pages([self.viewer_id], stored, bound, count)
        if not feed_exact:
            # The cached window ends here: this and every later round, from PostgreSQL.
            self.window_done = True
            return await self.sql.candidates(bound, count)
        self.merged_pull_authors = True
        if not stored and not self.authors_in_sql:  # no pull author: the feed's order
            return feed[:count]
        merged = set(feed)
        for author, (entries, exact) in zip(stored, pulled, strict=True):
            if not exact:
                self.authors_in_sql.append(author)  # its store's window ends here
            else:
                merged.update(entries)
        if self.authors_in_sql:
            merged.update(
                await authors_entries_sql(
                    self.engine, self.authors_in_sql, before=bound, limit=count, rising=self.rising
                )
            )
        return sorted(merged, reverse=not self.rising)[:count]

    async def _pages(
        self,
        owners: list[uuid.UUID],
        pull_authors: list[uuid.UUID],
        bound: Entry | None,
        count: int,
    ) -> list[tuple[list[Entry], bool]]:
        """Read the feed and pull authors' stores in one round trip, rebuilding what is missing
        (one rebuild per key; if busy, that part from SQL); each part with whether it is exact."""
        feeds, posts = self.stores.feeds, self.stores.author_posts
        wanted = [(feeds, o) for o in owners] + [(posts, a) for a in pull_authors]
        pages: Sequence[Rising | list[Entry] | StoreError | None]
        if self.rising:
            pages = await feeds.read_rising(wanted, bound, count, strict=False)
        else:
            pages = await feeds.read_pages(wanted, bound, count, strict=False)
        misses = sum(p is None for p in pages)
        metrics.current().feed_timelines_read(len(pages) - misses, misses)
        out: list[tuple[list[Entry], bool]] = []
        for (timelines, owner), page in zip(wanted, pages, strict=True):
            if isinstance(page, StoreError):
                if timelines is feeds:
                    raise page  # the viewer's own feed: the whole page from PostgreSQL
                # A pull author's node is down: read that author alone from PostgreSQL.
                out.append(([], False))
            elif page is None:
                out.append(await self._rebuilt(timelines, owner, bound, count))
            else:
                out.append(self._exact(page, count))
        return out

    def _exact(self, page: Rising | list[Entry], count: int) -> tuple[list[Entry], bool]:
        """A page and whether it is exact (falling: as long as asked)."""
        if isinstance(page, Rising):
            return page.entries, page.exact
        return page, len(page) >= count

    async def _rebuilt(
        self, timelines: Timelines, owner: uuid.UUID, bound: Entry | None, count: int
    ) -> tuple[list[Entry], bool]:
        """Rebuild a missing timeline and read its page; if busy, read it from PostgreSQL."""
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
            if self.rising:
                (rising,) = await timelines.read_rising([(timelines, owner)], bound, count)
                if isinstance(rising, Rising):
                    return rising.entries, rising.exact
            else:
                (page,) = await timelines.page([owner], bound, count)
                if page is not None:
                    return self._exact(page, count)
        except RebuildBusyError:
            pass
        if is_feed:
            return await self.sql.candidates(bound, count), True
        if self.rising:
            return await authors_entries_sql(
                self.engine, [owner], before=bound, limit=count, rising=True
            ), True
        async with self.engine.connect() as conn:
            return await author_recent_entries(conn, owner, limit=count, before=bound), True
