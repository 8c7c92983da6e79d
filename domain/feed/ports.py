"""The ports of the feed (timelines, ranking signals, ranked windows, a job's saved
place), on Redis in ``adapters.feedstore``. Every method raises
:class:`domain.errors.StoreError` when the store fails.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from domain.errors import StoreError
from domain.feed.ranking import Signals
from domain.feed.timelines.entries import Entry


class RebuildBusyError(Exception):
    """Another process is rebuilding this timeline right now."""


@dataclass(frozen=True, slots=True)
class Rising:
    """A rising page of a timeline: ``entries`` oldest first, and whether they are
    ``exact`` (every entry newer than the bound is in the timeline: it is whole, or the
    bound is not older than its oldest entry); else the page is PostgreSQL's to read."""

    entries: list[Entry]
    exact: bool


class Timelines(Protocol):
    """One family of timelines (``<prefix>:{<owner id>}``): sorted sets of
    :class:`Entry`, ``max_len`` kept, complete for their window when they exist
    (docs/design.md "Home feed"; see :mod:`domain.feed.timelines`)."""

    prefix: str
    max_len: int

    def key(self, owner: uuid.UUID) -> str:
        """The owner's timeline key."""
        ...

    async def add(self, owners: Sequence[uuid.UUID], entries: Sequence[Entry]) -> int:
        """Add ``entries`` to the timelines of ``owners`` that exist (or are being
        rebuilt); idempotent; returns how many timelines were written."""
        ...

    async def remove(self, owner: uuid.UUID, post_ids: Sequence[uuid.UUID]) -> int:
        """Remove posts from one owner's timeline; return how many it held."""
        ...

    async def remove_from_many(
        self, owners: Sequence[uuid.UUID], post_ids: Sequence[uuid.UUID]
    ) -> int:
        """Remove posts from the timelines of ``owners`` (and rebuilds in progress);
        idempotent; returns how many entries were removed."""
        ...

    async def page(
        self, owners: Sequence[uuid.UUID], before: Entry | None, count: int
    ) -> list[list[Entry] | None]:
        """Per owner, up to ``count`` entries strictly before ``before`` (newest first),
        or None where the timeline does not exist."""
        ...

    async def read_pages(
        self,
        wanted: Sequence[tuple[Timelines, uuid.UUID]],
        before: Entry | None,
        count: int,
        *,
        strict: bool = True,
    ) -> list[list[Entry] | StoreError | None]:
        """One page of each ``(timelines, owner)`` (families of this one's store) in one
        round trip, as :meth:`page`; reading refreshes the TTL. Unless ``strict``, a
        timeline whose store node failed gets the StoreError in its place."""
        ...

    async def read_rising(
        self,
        wanted: Sequence[tuple[Timelines, uuid.UUID]],
        after: Entry | None,
        count: int,
        *,
        strict: bool = True,
    ) -> list[Rising | StoreError | None]:
        """As :meth:`read_pages`, upward: per timeline up to ``count`` entries strictly
        newer than ``after`` (None: from its oldest), oldest first, as a :class:`Rising`."""
        ...

    async def exists(self, owner: uuid.UUID) -> bool:
        """Whether the owner's timeline exists (is complete)."""
        ...

    async def drop(self, owner: uuid.UUID) -> None:
        """Delete the owner's timeline, so the next read rebuilds it."""
        ...

    async def drop_many(self, owners: Sequence[uuid.UUID], *, with_builds: bool = True) -> int:
        """Delete the timelines of ``owners`` (and rebuilds in progress); return keys
        deleted."""
        ...

    async def rebuild(
        self, owner: uuid.UUID, load: Callable[[], Awaitable[Sequence[Entry]]]
    ) -> bool:
        """Rebuild one owner's timeline from ``load()`` (its newest ``max_len``
        entries); at most one rebuild per owner at a time. Raises RebuildBusyError when
        another holds it; False if the build vanished midway."""
        ...


@dataclass(frozen=True, slots=True)
class Engagement:
    """One like or comment: ``actor`` engaged with ``post_id`` (by ``author_id``, of
    media ``kind``) at ``at``; ``ref`` is ``l:<liker>`` or ``c:<comment>``."""

    actor: uuid.UUID
    post_id: uuid.UUID
    author_id: uuid.UUID
    kind: str
    ref: str
    at: dt.datetime


class RankingSignals(Protocol):
    """The ranked feed's signals (docs/architecture/home-feed.md "Home feed", Ranked
    order): recorded by the like and comment consumers, read once per ranked window."""

    async def record(self, e: Engagement, *, now: dt.datetime) -> bool:
        """Record one engagement (idempotent); whether it counted as new in the post's
        velocity."""
        ...

    async def withdraw(self, post_id: uuid.UUID, ref: str) -> dt.datetime | None:
        """Take an engagement out of the post's velocity (an unlike, a deleted
        comment); return when it was counted (None: the velocity did not hold it)."""
        ...

    async def read(
        self, viewer_id: uuid.UUID, authors: Mapping[uuid.UUID, uuid.UUID], now: dt.datetime
    ) -> Signals:
        """Every signal the score reads for the window ``authors`` ({post id: author
        id}) at ``now``, in one round trip."""
        ...

    async def read_viewer(
        self, viewer_id: uuid.UUID, authors: Iterable[uuid.UUID], now: dt.datetime
    ) -> Signals:
        """The viewer's signals alone (which of ``authors`` they engaged with, their
        preferred kind; no velocity nor average), in one round trip."""
        ...

    async def forget_account(self, user_id: uuid.UUID) -> None:
        """Delete what the ranked feed keeps of a purged account (as viewer and
        author)."""
        ...


@dataclass(frozen=True, slots=True)
class Window:
    """A frozen ranked window: ``entries`` in rank order, and the ``tail`` entry older
    posts continue from (None: the feed has nothing older)."""

    entries: list[Entry]
    tail: Entry | None


class RankedWindows(Protocol):
    """Frozen ranked windows, kept for a TTL each read refreshes
    (docs/architecture/home-feed.md "Home feed", Ranked order); a window is only found
    with its viewer's id."""

    def new_id(self) -> str:
        """A fresh window id."""
        ...

    async def save(self, viewer_id: uuid.UUID, window_id: str, window: Window) -> None:
        """Store ``window`` under ``window_id`` for the TTL."""
        ...

    async def load(self, viewer_id: uuid.UUID, window_id: str) -> Window | None:
        """The window, its TTL refreshed; None when it expired or is not the viewer's."""
        ...


class Marks(Protocol):
    """Small records of strings beside the timelines (a long job's saved place), each
    with a TTL."""

    async def get(self, key: str) -> dict[str, str]:
        """The record under ``key`` (empty when there is none)."""
        ...

    async def put(self, key: str, fields: Mapping[str, str], ttl_s: int) -> None:
        """Set ``fields`` of the record under ``key``; it expires ``ttl_s`` later."""
        ...

    async def delete(self, key: str) -> None:
        """Forget the record under ``key``."""
        ...
