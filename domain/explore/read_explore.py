"""Use case: a page of the viewer's explore feed or its video variant (README "Explore"): the first
page ranks the trending pool's top ``window`` and freezes it, later pages slice it; the
``visible`` check (``in_explore``) drops posts page by page."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.explore.ports import Family
from domain.explore.queries import candidate_facts
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

#: A media kind filter: None (every post), ``image`` or ``video``.
Kind = Literal["image", "video"] | None


def family_of(kind: Kind) -> Family:
    """The trending pool a kind reads (video posts have their own)."""
    return "video" if kind == "video" else "all"


async def read_explore(
    engine: AsyncEngine,
    stores: FeedStores,
    config: FeedConfig,
    viewer_id: uuid.UUID,
    *,
    kind: Kind,
    first: int,
    after: Position | None,
    visible: Visible,
    now: dt.datetime,
) -> RankedPage:
    """The explore page of ``first`` posts after ``after`` (None: rank and freeze). Raises
    RankedWindowExpiredError or StoreError."""

    async def nothing(_: Entry | None, __: int) -> RankedPage:
        return RankedPage([], False)

    windows = stores.windows
    if after is not None:
        assert after.window_id is not None
        window = await windows.load(viewer_id, after.window_id)
        if window is None:
            raise RankedWindowExpiredError(after.window_id)
        return await slice_window(window, after.window_id, after.offset, first, visible, nothing)

    cfg = config.explore
    pooled = await stores.trending.top(family_of(kind), cfg.window, now)
    if not pooled:
        return RankedPage([], False)
    engagements = dict(pooled)
    facts = await candidate_facts(engine, viewer_id, list(engagements))
    candidates = [f for f in facts.values() if kind is None or f.kind == kind]
    if not candidates:
        return RankedPage([], False)
    authors = {c.author_id for c in candidates}
    read = stores.signals.read_viewer(viewer_id, authors, now)
    signals = await signals_or_none(read, viewer_id) or Signals()
    ordered = rank_explore(candidates, engagements, signals, viewer_id, now, cfg, config.ranking)
    window = Window([c.entry for c in ordered], None)
    window_id = windows.new_id()
    _, page = await asyncio.gather(
        windows.save(viewer_id, window_id, window),
        slice_window(window, window_id, 0, first, visible, nothing),
    )
    return page
