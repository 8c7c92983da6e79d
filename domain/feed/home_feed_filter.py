"""The home feed's visibility check of candidate posts (domain.visibility.rules.in_home_feed)
over their hydration (domain.feed.hydration): the :data:`domain.feed.read_feed.Visible`
port of both feed orders, keeping what it hydrated for the caller."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.feed.hydration import HydratedPost, Wanted, hydrate_posts
from domain.feed.timelines import Entry
from domain.visibility import rules
from domain.visibility.facts import Viewer


class HomeFeedFilter:
    """``await check(entries) -> [visible?]`` in order: one hydration statement per call
    for the posts, their authors, the viewer's blocks, follows and mutes of those authors
    and what ``wanted`` asks for. ``kept`` holds the visible posts hydrated so far, by id."""

    def __init__(self, engine: AsyncEngine, viewer_id: uuid.UUID, wanted: Wanted) -> None:
        self.engine = engine
        self.viewer_id = viewer_id
        self.wanted = wanted
        self.kept: dict[uuid.UUID, HydratedPost] = {}

    async def __call__(self, entries: Sequence[Entry]) -> list[bool]:
        viewer_id = self.viewer_id
        hydrated = await hydrate_posts(
            self.engine, viewer_id, [e.post_id for e in entries], self.wanted
        )
        others = [
            (h.author.id, h) for h in hydrated.values() if h.author and h.author.id != viewer_id
        ]
        viewer = Viewer(
            viewer_id,
            frozenset(a for a, h in others if h.blocked),
            frozenset(a for a, h in others if h.followed),
            frozenset(a for a, h in others if h.muted),
        )
        kept = self.kept
        for pid, h in hydrated.items():
            if rules.in_home_feed(viewer, h.post, h.author):
                kept[pid] = h
        return [e.post_id in kept for e in entries]

    def posts(self, entries: Sequence[Entry]) -> list[HydratedPost]:
        """The hydrated posts of ``entries`` (each one this filter let through)."""
        return [self.kept[e.post_id] for e in entries]
