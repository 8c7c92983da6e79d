"""Use case: a hashtag's posts ranked as explore ranks, without follow tiers (docs/api/explore.md
"Hashtags ranked"): a frozen window of the tag's newest posts, then newest first past it."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.engagement.hashtags import fold_tag
from domain.explore.queries import candidate_facts, tag_entries
from domain.explore.scoring import rank_explore
from domain.feed.config import FeedConfig, FeedStores
from domain.feed.ports import Window
from domain.feed.ranking import Signals
from domain.feed.read_feed import Visible
from domain.feed.read_ranked_feed import (
    Position,
    RankedPage,
    RankedWindowExpiredError,
    signals_or_none,
    slice_window,
)
from domain.feed.timelines import Entry


async def read_ranked_hashtag(
    engine: AsyncEngine,
    stores: FeedStores,
    config: FeedConfig,
    viewer_id: uuid.UUID,
    tag: str,
    *,
    first: int,
    after: Position | None,
    visible: Visible,
    now: dt.datetime,
) -> RankedPage:
    """The ranked page of ``first`` posts tagged ``tag`` after ``after`` (None: rank and freeze).
    Raises RankedWindowExpiredError or StoreError."""
    name = fold_tag(tag)

    async def chronological(before: Entry | None, n: int) -> RankedPage:
        entries, more = await tag_entries(engine, name, before, n)
        flags = await visible(entries) if entries else []
        kept = [(e, Position(None, 0, e)) for e, ok in zip(entries, flags, strict=True) if ok]
        return RankedPage(kept, more)

    windows = stores.windows
    if after is not None:
        if after.window_id is None:
            return await chronological(after.entry, first)
        window = await windows.load(viewer_id, after.window_id)
        if window is None:
            raise RankedWindowExpiredError(after.window_id)
        return await slice_window(
            window, after.window_id, after.offset, first, visible, chronological
        )

    entries, more = await tag_entries(engine, name, None, config.explore.window)
    if not entries:
        return RankedPage([], False)
    ids = [e.post_id for e in entries]
    facts, engagements = await asyncio.gather(
        candidate_facts(engine, viewer_id, ids), stores.trending.counts(ids, now)
    )
    # No tiers here: a followed author's post is as welcome as anyone's.
    candidates = [f._replace(followed=False) for f in facts.values()]
    read = stores.signals.read_viewer(viewer_id, {c.author_id for c in candidates}, now)
    signals = await signals_or_none(read, viewer_id) or Signals()
    ordered = rank_explore(
        candidates, engagements, signals, viewer_id, now, config.explore, config.ranking
    )
    window = Window([c.entry for c in ordered], entries[-1] if more else None)
    window_id = windows.new_id()
    _, page = await asyncio.gather(
        windows.save(viewer_id, window_id, window),
        slice_window(window, window_id, 0, first, visible, chronological),
    )
    return page
