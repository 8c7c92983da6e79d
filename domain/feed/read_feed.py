"""Use case: read a page of the viewer's home feed (design.md "Home feed", Read).

Candidates come from the viewer's Redis feed merged with the recent posts of the pull
authors they follow, deduplicated by post id, newest first by (created_at, id). The
caller's ``visible`` check (hydration through dataloaders) drops what is deleted,
blocked, banned or no longer followed, and the page is refilled until it is full or
the feed is exhausted. Past the end of the cached window, and whenever Redis fails,
the same order and cursors come from PostgreSQL.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from redis.exceptions import RedisError
from sqlalchemy.ext.asyncio import AsyncEngine

from domain import metrics
from domain.feed.config import FeedConfig, FeedStores
from domain.feed.sources import author_recent_entries, followed_pull_authors, home_entries_sql
from domain.feed.timelines import Entry, RebuildBusyError, Timelines, read_pages

log = logging.getLogger(__name__)

#: Decides, for a batch of candidate entries, which the viewer may see (same order).
Visible = Callable[[Sequence[Entry]], Awaitable[list[bool]]]

_MAX_ROUNDS = 8  # refill rounds per page before giving up on filling it


@dataclass(frozen=True)
class FeedPage:
    """Up to ``first`` visible entries, newest first; ``has_next`` if more exist.
    ``source`` says where the page came from (``redis`` or ``postgres``)."""

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
) -> FeedPage:
    """Return the page of ``first`` entries after the cursor ``before`` (None: newest).

    Never raises for Redis trouble: it serves from PostgreSQL and counts it in
    ``roost_feed_postgres_fallbacks_total``.
    """
    try:
        source = _RedisSource(engine, stores, config, viewer_id)
        return await _fill(source, first, before, visible, "redis")
    except RedisError as exc:
        log.warning("feed of %s served from PostgreSQL: Redis failed (%r)", viewer_id, exc)
        metrics.current().feed_fallback()
        return await _fill(_SqlSource(engine, viewer_id), first, before, visible, "postgres")


async def _fill(source, first: int, before: Entry | None, visible: Visible, name) -> FeedPage:
    kept: list[Entry] = []
    cursor = before
    for _ in range(_MAX_ROUNDS):
        want = first + 1 - len(kept)  # one more than the page: tells has_next
        batch = await source.candidates(cursor, want)
        if not batch:
            return FeedPage(kept[:first], len(kept) > first, name)
        flags = await visible(batch)
        kept += [e for e, ok in zip(batch, flags, strict=True) if ok]
        cursor = batch[-1]
        if len(kept) > first:
            return FeedPage(kept[:first], True, name)
    # Too much filtered out in a row: return what we have; the cursor carries on.
    return FeedPage(kept[:first], True, name)


class _SqlSource:
    """Fan-out-on-read from PostgreSQL: the fallback, and the feed past its window."""

    def __init__(self, engine: AsyncEngine, viewer_id: uuid.UUID) -> None:
        self.engine = engine
        self.viewer_id = viewer_id

    async def candidates(self, before: Entry | None, count: int) -> list[Entry]:
        async with self.engine.connect() as conn:
            return await home_entries_sql(conn, self.viewer_id, before=before, limit=count)


class _RedisSource:
    """The viewer's cached feed merged with followed pull authors' recent posts."""

    def __init__(
        self, engine: AsyncEngine, stores: FeedStores, config: FeedConfig, viewer_id: uuid.UUID
    ) -> None:
        self.engine = engine
        self.stores = stores
        self.config = config
        self.viewer_id = viewer_id
        self.pull_authors: list[uuid.UUID] | None = None
        self.window_done = False  # the cached feed is exhausted: continue in SQL
        self.sql = _SqlSource(engine, viewer_id)

    async def candidates(self, before: Entry | None, count: int) -> list[Entry]:
        if self.window_done:
            return await self.sql.candidates(before, count)
        if self.pull_authors is None:
            async with self.engine.connect() as conn:
                self.pull_authors = await followed_pull_authors(conn, self.viewer_id)
        owners = [self.viewer_id]
        feed, *pulled = await self._pages(owners, self.pull_authors, before, count)
        merged = sorted({e for part in (feed, *pulled) for e in part}, reverse=True)[:count]
        if len(feed) < count:
            # The cached window ends here; older posts (if any) come from PostgreSQL.
            self.window_done = True
            older = await self.sql.candidates(merged[-1] if merged else before, count)
            merged = sorted(set(merged) | set(older), reverse=True)[:count]
        return merged

    async def _pages(
        self, owners: list[uuid.UUID], pull_authors: list[uuid.UUID], before, count: int
    ) -> list[list[Entry]]:
        """Read the feed and every pull author's store in one round trip; rebuild what
        is missing (one rebuild per key at a time; if busy, read that part in SQL)."""
        feeds, posts = self.stores.feeds, self.stores.author_posts
        wanted = [(feeds, o) for o in owners] + [(posts, a) for a in pull_authors]
        pages = await read_pages(wanted, before, count)
        misses = pages.count(None)
        metrics.current().feed_timelines_read(len(pages) - misses, misses)
        for i, ((timelines, owner), page) in enumerate(zip(wanted, pages, strict=True)):
            if page is None:
                pages[i] = await self._rebuilt(timelines, owner, before, count)
        return pages

    async def _rebuilt(
        self, timelines: Timelines, owner: uuid.UUID, before: Entry | None, count: int
    ) -> list[Entry]:
        """Rebuild a missing timeline from PostgreSQL, then read its page; while another
        process rebuilds it, read that page from PostgreSQL instead."""
        is_feed = timelines is self.stores.feeds
        limit = self.config.max_len

        async def load() -> list[Entry]:
            async with self.engine.connect() as conn:
                if is_feed:
                    return await home_entries_sql(conn, owner, before=None, limit=limit)
                return await author_recent_entries(conn, owner, limit=limit)

        try:
            await timelines.rebuild(owner, load)
            metrics.current().feed_rebuilt(timelines.prefix)
            (page,) = await timelines.page([owner], before, count)
            if page is not None:
                return page
        except RebuildBusyError:
            pass
        async with self.engine.connect() as conn:
            if is_feed:
                return await home_entries_sql(conn, owner, before=before, limit=count)
            return await author_recent_entries(conn, owner, limit=count, before=before)
