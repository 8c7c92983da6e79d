"""Use case: fan a new post out to its author's followers (docs/seeds/feed-fan-out.md "What the
worker does with each event")."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import read_counts
from domain.db import utcnow
from domain.errors import StoreError
from domain.feed.config import FeedConfig, FeedStores
from domain.feed.policy import Mode, next_mode
from domain.feed.sources import active_followers_page, author_recent_entries
from domain.feed.timelines import Entry
from domain.locks import advisory_xact_lock
from domain.visibility.predicates import is_live


@dataclass(frozen=True)
class FanOutResult:
    """One fan-out: the author's mode, follower pages read, feeds written, and the
    commit-to-last-write lag (s)."""

    post_id: uuid.UUID
    mode: Mode | None  # None: the post is gone (deleted or never committed)
    pages: int = 0
    feeds_written: int = 0
    lag_seconds: float = 0.0


class FeedListener(Protocol):
    """Told where a post went after the feeds are written; must not raise."""

    async def entered_feeds(
        self, post_id: uuid.UUID, author_id: uuid.UUID, owners: Sequence[uuid.UUID]
    ) -> None: ...

    async def entered_pull_feeds(self, post_id: uuid.UUID, author_id: uuid.UUID) -> None: ...


async def fan_out_post(
    engine: AsyncEngine,
    stores: FeedStores,
    config: FeedConfig,
    post_id: uuid.UUID,
    listener: FeedListener | None = None,
) -> FanOutResult:
    """Deliver ``post_id`` to its feeds; idempotent. Push authors' posts go to followers active
    within ``config.active_window``, one Redis round trip per page. Raises StoreError /
    DBAPIError once every reachable feed is written."""
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text(f"SELECT author_id, created_at FROM posts WHERE id = :id AND {is_live()}"),
                {"id": post_id},
            )
        ).first()
    if row is None:
        return FanOutResult(post_id, None)
    author_id, created_at = row
    entry = Entry.of(created_at, post_id)
    # A failing store node does not stop the others; the first failure is raised at the end.
    failures: list[StoreError] = []

    async def write(targets: list[uuid.UUID]) -> int:
        try:
            n = await stores.feeds.add(targets, [entry])
        except StoreError as exc:
            failures.append(exc)
            return 0
        if listener is not None:
            await listener.entered_feeds(post_id, author_id, targets)
        return n

    try:
        await stores.author_posts.add([author_id], [entry])
    except StoreError as exc:
        failures.append(exc)
    await write([author_id])

    mode = await _settle_mode(engine, stores, config, author_id, created_at)
    if mode == "pull":
        if listener is not None and not failures:
            await listener.entered_pull_feeds(post_id, author_id)
        _raise_first(failures)
        return FanOutResult(post_id, "pull", lag_seconds=_lag(created_at))

    # Pipelined: a page's Redis write overlaps the next page's read (at most two in flight).
    pages = written = 0
    after = None
    active_since = utcnow() - config.active_window
    writing: asyncio.Task[int] | None = None
    try:
        while True:
            async with engine.connect() as conn:
                targets, after = await active_followers_page(
                    conn, author_id, active_since=active_since, after=after, limit=config.batch_size
                )
            pages += 1
            previous = writing
            writing = asyncio.ensure_future(write(targets)) if targets else None
            if previous is not None:
                written += await previous
            if after is None:
                break
        if writing is not None:
            written += await writing
            writing = None
    finally:
        if writing is not None:  # a read failed: stop the write, keep the read's error
            writing.cancel()
            await asyncio.gather(writing, return_exceptions=True)
    _raise_first(failures)
    return FanOutResult(post_id, "push", pages, written, _lag(created_at))


def _lag(created_at: dt.datetime) -> float:
    return max(0.0, time.time() - created_at.timestamp())


def _raise_first(failures: list[StoreError]) -> None:
    if failures:
        raise failures[0]


#: A flip back to push also pushes posts this long before the pull period (late jobs).
FLIP_MARGIN = dt.timedelta(minutes=5)


async def _settle_mode(
    engine: AsyncEngine,
    stores: FeedStores,
    config: FeedConfig,
    author_id: uuid.UUID,
    post_created_at: dt.datetime,
) -> Mode:
    """The author's mode for this post, flipped under a per-author lock; pull -> push pushes the
    pull-time posts before the mode row says push."""
    async with engine.begin() as conn:
        counts = await read_counts(conn, [author_id], ["followers"])
        followers = counts[(author_id, "followers")]
        row = (
            await conn.execute(
                text("SELECT mode, changed_at FROM author_feed_modes WHERE author_id = :a"),
                {"a": author_id},
            )
        ).first()
        current: Mode = row.mode if row else "push"
        wanted = next_mode(
            current,
            followers,
            pull_at=config.pull_threshold,
            push_under=config.push_back_threshold,
        )
        if wanted == current:
            return current
        await advisory_xact_lock(conn, "feed-mode", author_id)
        # Re-read under the lock: another job may have flipped it meanwhile.
        current = (
            await conn.scalar(
                text("SELECT mode FROM author_feed_modes WHERE author_id = :a"), {"a": author_id}
            )
            or "push"
        )
        if wanted == current:
            return current
        if wanted == "push":
            since = row.changed_at - FLIP_MARGIN if row else None
            backlog = await author_recent_entries(
                conn, author_id, limit=config.max_len, since=since
            )
            await _push_backlog(engine, stores, config, author_id, backlog)
        await conn.execute(
            text(
                "INSERT INTO author_feed_modes (author_id, mode, changed_at)"
                " VALUES (:a, :m, :at)"
                " ON CONFLICT (author_id) DO UPDATE SET mode = :m, changed_at = :at"
            ),
            {"a": author_id, "m": wanted, "at": min(post_created_at, utcnow())},
        )
        return wanted


async def _push_backlog(
    engine: AsyncEngine,
    stores: FeedStores,
    config: FeedConfig,
    author_id: uuid.UUID,
    entries: list[Entry],
) -> None:
    """Push an author's pull-period posts to every active follower (one flip, rare)."""
    if not entries:
        return
    after = None
    active_since = utcnow() - config.active_window
    while True:
        async with engine.connect() as conn:
            targets, after = await active_followers_page(
                conn, author_id, active_since=active_since, after=after, limit=config.batch_size
            )
        await stores.feeds.add(targets, entries)
        if after is None:
            return
