"""Use case: read the ranked home feed backward (``last``/``before``; docs/architecture/home-feed.md
"Ranked order"); from the end, a new window is frozen."""

from __future__ import annotations

import datetime as dt
import logging
import uuid

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import StoreError
from domain.feed.config import FeedConfig, FeedStores
from domain.feed.ports import Window
from domain.feed.pull_guesses import PullAuthorGuesses
from domain.feed.read_feed import PullAuthors, Visible, read_home_feed
from domain.feed.read_ranked_feed import (
    Position,
    RankedPage,
    load_window,
    rank_window,
)
from domain.feed.timelines import Entry

log = logging.getLogger(__name__)

_MAX_BATCH = 1024


async def read_ranked_feed_backward(
    engine: AsyncEngine,
    stores: FeedStores,
    config: FeedConfig,
    viewer_id: uuid.UUID,
    *,
    last: int,
    before: Position | None,
    visible: Visible,
    now: dt.datetime,
    pull_authors: PullAuthors | None = None,
    guesses: PullAuthorGuesses | None = None,
) -> RankedPage:
    """The ``last`` entries before ``before`` (None: the end of a new window), in feed order;
    ``has_next`` exact. Raises RankedWindowExpiredError."""

    async def rising(
        after: Entry | None, below: Entry | None, n: int, walk: str | None
    ) -> tuple[list[tuple[Entry, Position]], bool]:
        """Up to ``n`` visible entries newer than ``after``, older than ``below`` (None: no bound),
        newest first; and whether more lie between."""
        page = await read_home_feed(
            engine,
            stores,
            config,
            viewer_id,
            first=n + 1,
            before=after,
            visible=visible,
            pull_authors=pull_authors,
            rising=True,
            guesses=guesses,
        )
        kept = [e for e in page.entries if below is None or e < below]
        more = len(kept) > n or (below is None and page.has_next)
        return [(e, Position(None, 0, e, walk)) for e in kept[-n:] if n], more

    async def into(window: Window, window_id: str, after: Entry | None) -> RankedPage:
        """The continuation's entries newer than ``after``, then the window's last."""
        items: list[tuple[Entry, Position]] = []
        if window.tail is not None:
            items, more = await rising(after, window.tail, last, window_id)
            if more:
                return RankedPage(items, True)
        above = await slice_backward(
            window, window_id, len(window.entries), last - len(items), visible
        )
        return RankedPage(above.items + items, above.has_next)

    if before is not None and before.window_id is not None:
        window = await load_window(stores, viewer_id, before.window_id)
        return await slice_backward(window, before.window_id, before.offset - 1, last, visible)
    if before is not None and before.walk is None:  # a walk without a window
        items, more = await rising(before.entry, None, last, None)
        return RankedPage(items, more)
    if before is not None:
        assert before.walk is not None
        window = await load_window(stores, viewer_id, before.walk)
        return await into(window, before.walk, before.entry)

    ranked = await rank_window(
        engine, stores, config, viewer_id, now=now, pull_authors=pull_authors
    )
    if ranked is None:
        return RankedPage([], False)
    window_id = stores.windows.new_id()
    try:
        await stores.windows.save(viewer_id, window_id, ranked)
    except StoreError:
        log.warning("ranked window of %s not frozen: chronological", viewer_id, exc_info=True)
        items, more = await rising(None, None, last, None)
        return RankedPage(items, more)
    return await into(ranked, window_id, None)


async def slice_backward(
    window: Window, window_id: str, end: int, last: int, visible: Visible
) -> RankedPage:
    """The last ``last`` visible entries of the window's first ``end``, rank order; exact
    ``has_next``."""
    found: list[tuple[Entry, Position]] = []  # nearest first
    at = min(max(end, 0), len(window.entries))
    want = last + 1
    while at > 0 and len(found) <= last:
        start = max(at - want, 0)
        batch = window.entries[start:at]
        flags = await visible(batch)
        for i in range(len(batch) - 1, -1, -1):
            if flags[i]:
                found.append((batch[i], Position(window_id, start + i + 1, batch[i])))
        at = start
        want = min(max(last + 1 - len(found), 2 * want), _MAX_BATCH)
    return RankedPage(found[:last][::-1], len(found) > last)
