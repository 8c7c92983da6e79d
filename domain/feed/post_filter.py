"""The visibility check of candidate posts: one hydration statement per batch, then a rule of
domain.visibility.rules."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.feed.hydration import HydratedPost, Wanted, hydrate_posts
from domain.feed.timelines import Entry
from domain.visibility import rules
from domain.visibility.facts import AccountFacts, PostFacts, Viewer

#: A rule of domain.visibility.rules over a post and its author, for one viewer.
PostRule = Callable[[Viewer, PostFacts | None, AccountFacts | None], bool]


class PostFilter:
    """The ``Visible`` port: ``await check(entries) -> [visible?]``, or ``await
    check.hydrate(ids)``; ``kept`` holds the hydrated posts let through, by id. With
    ``wanted.feed_reader``, ``pull_authors`` and ``reader_active`` as the last hydration
    read them (None until a row came back)."""

    def __init__(
        self,
        engine: AsyncEngine,
        viewer_id: uuid.UUID,
        wanted: Wanted,
        rule: PostRule = rules.in_home_feed,
    ) -> None:
        self.engine = engine
        self.viewer_id = viewer_id
        self.wanted = wanted
        self.rule = rule
        self.kept: dict[uuid.UUID, HydratedPost] = {}
        self.pull_authors: list[uuid.UUID] | None = None
        self.reader_active: bool | None = None

    async def hydrate(self, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, HydratedPost]:
        """The posts of ``ids`` the rule lets through, hydrated (also added to ``kept``)."""
        viewer_id = self.viewer_id
        hydration = await hydrate_posts(self.engine, viewer_id, ids, self.wanted)
        if hydration.pull_authors is not None:
            self.pull_authors = hydration.pull_authors
            self.reader_active = hydration.reader_active
        hydrated = hydration.posts
        others = [
            (h.author.id, h) for h in hydrated.values() if h.author and h.author.id != viewer_id
        ]
        viewer = Viewer(
            viewer_id,
            frozenset(a for a, h in others if h.blocked),
            frozenset(a for a, h in others if h.followed),
            frozenset(a for a, h in others if h.muted),
        )
        rule = self.rule
        found = {pid: h for pid, h in hydrated.items() if rule(viewer, h.post, h.author)}
        self.kept.update(found)
        return found

    async def __call__(self, entries: Sequence[Entry]) -> list[bool]:
        found = await self.hydrate([e.post_id for e in entries])
        return [e.post_id in found for e in entries]

    def posts(self, entries: Sequence[Entry]) -> list[HydratedPost]:
        """The hydrated posts of ``entries`` (each one this filter let through)."""
        return [self.kept[e.post_id] for e in entries]
