"""Use case: read a page of the ranked home feed (docs/architecture/home-feed.md "Ranked order"):
the first page freezes a scored window, later pages slice it then go on chronologically from its
tail."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import StoreError
from domain.feed.config import FeedConfig, FeedStores
from domain.feed.ports import Window
from domain.feed.pull_guesses import PullAuthorGuesses
from domain.feed.ranking import Candidate, Signals, rank
from domain.feed.ranking_queries import live_post_facts
from domain.feed.read_feed import PullAuthors, Visible, read_home_feed
from domain.feed.timelines import Entry

log = logging.getLogger(__name__)

_MAX_BATCH = 1024
T = TypeVar("T")
#: The chronological continuation of a walk: ``(before, n) -> page``.
Chronological = Callable[[Entry | None, int], Awaitable["RankedPage"]]


class RankedWindowExpiredError(Exception):
    """The cursor's frozen window is gone or not the viewer's: start again."""


@dataclass(frozen=True, slots=True)
class Position:
    """An edge's place: in window ``window_id`` at ``offset``, or (``window_id`` None) in the
    chronological continuation at ``entry``."""

    window_id: str | None
    offset: int
    entry: Entry
    walk: str | None = None


@dataclass(frozen=True)
class RankedPage:
    """Up to ``first`` visible entries with positions, in feed order; ``has_next`` exact."""

    items: list[tuple[Entry, Position]]
    has_next: bool


async def read_ranked_feed(
    engine: AsyncEngine,
    stores: FeedStores,
    config: FeedConfig,
    viewer_id: uuid.UUID,
    *,
    first: int,
    after: Position | None,
    visible: Visible,
    now: dt.datetime,
    pull_authors: PullAuthors | None = None,
    guesses: PullAuthorGuesses | None = None,
) -> RankedPage:
    """The ranked page after ``after`` (None: the top, freezing a window). Raises
    RankedWindowExpiredError; no other Redis trouble raises."""
    windows = stores.windows

    def chronological(walk: str | None) -> Chronological:
        async def read(before: Entry | None, n: int) -> RankedPage:
            page = await read_home_feed(
                engine,
                stores,
                config,
                viewer_id,
                first=n,
                before=before,
                visible=visible,
                pull_authors=pull_authors,
                guesses=guesses,
            )
            items = [(e, Position(None, 0, e, walk)) for e in page.entries]
            return RankedPage(items, page.has_next)

        return read

    if after is not None:
        window_id = after.window_id
        if window_id is None:
            return await chronological(after.walk)(after.entry, first)
        window = await load_window(stores, viewer_id, window_id)
        return await slice_window(
            window, window_id, after.offset, first, visible, chronological(window_id)
        )

    ranked = await rank_window(
        engine, stores, config, viewer_id, now=now, pull_authors=pull_authors
    )
    if ranked is None:
        return RankedPage([], False)
    window_id = windows.new_id()
    saved, page = await asyncio.gather(
        windows.save(viewer_id, window_id, ranked),
        slice_window(ranked, window_id, 0, first, visible, chronological(window_id)),
        return_exceptions=True,
    )
    if isinstance(page, BaseException):
        raise page
    if isinstance(saved, StoreError):
        log.warning("ranked window of %s not frozen: chronological", viewer_id, exc_info=saved)
        return await chronological(None)(None, first)
    if isinstance(saved, BaseException):
        raise saved
    return page


async def load_window(stores: FeedStores, viewer_id: uuid.UUID, window_id: str) -> Window:
    """The viewer's window ``window_id``; raises RankedWindowExpiredError if gone or unreadable."""
    try:
        window = await stores.windows.load(viewer_id, window_id)
    except StoreError:  # as good as gone: the walk starts again
        log.warning("ranked window of %s unreadable", viewer_id, exc_info=True)
        window = None
    if window is None:
        raise RankedWindowExpiredError(window_id)
    return window


async def rank_window(
    engine: AsyncEngine,
    stores: FeedStores,
    config: FeedConfig,
    viewer_id: uuid.UUID,
    *,
    now: dt.datetime,
    pull_authors: PullAuthors | None = None,
) -> Window | None:
    """A new unfrozen ranked window (None: empty feed); candidates unfiltered, checked when a page
    reaches them."""
    cfg = config.ranking
    found = await read_home_feed(
        engine,
        stores,
        config,
        viewer_id,
        first=cfg.window,
        before=None,
        visible=_unchecked,
        pull_authors=pull_authors,
    )
    if not found.entries:
        return None
    facts = await live_post_facts(engine, [e.post_id for e in found.entries])
    candidates = [
        Candidate(e, *fact) for e in found.entries if (fact := facts.get(e.post_id)) is not None
    ]
    authors = {c.entry.post_id: c.author_id for c in candidates}
    read = stores.signals.read(viewer_id, authors, now)
    scored = await signals_or_none(read, viewer_id) or Signals()
    ordered = [c.entry for c in rank(candidates, scored, viewer_id, now, cfg)]
    return Window(ordered, found.entries[-1] if found.has_next else None)


async def signals_or_none(read: Awaitable[T], viewer_id: uuid.UUID) -> T | None:
    """The signals read, or None when Redis fails (ranked without them)."""
    try:
        return await read
    except StoreError:
        log.warning("ranking signals of %s unavailable: recency only", viewer_id, exc_info=True)
        return None


async def _unchecked(entries: Sequence[Entry]) -> list[bool]:
    return [True] * len(entries)


async def slice_window(
    window: Window,
    window_id: str,
    offset: int,
    first: int,
    visible: Visible,
    chronological: Chronological,
) -> RankedPage:
    """``first`` visible entries of the window from ``offset``, then of the continuation past its
    tail."""
    items: list[tuple[Entry, Position]] = []
    at = max(offset, 0)
    want = first + 1
    while at < len(window.entries) and len(items) <= first:
        batch = window.entries[at : at + want]
        flags = await visible(batch)
        for i, (entry, ok) in enumerate(zip(batch, flags, strict=True)):
            if ok:
                items.append((entry, Position(window_id, at + i + 1, entry)))
        at += len(batch)
        want = min(max(first + 1 - len(items), 2 * want), _MAX_BATCH)
    if len(items) > first:
        return RankedPage(items[:first], True)
    if window.tail is None:
        return RankedPage(items, False)
    rest = await chronological(window.tail, first - len(items))
    if len(items) == first:  # full: only whether something follows
        return RankedPage(items, bool(rest.items) or rest.has_next)
    return RankedPage(items + rest.items, rest.has_next)
