"""The feed's ports (on Redis in ``adapters.feedstore``); every method raises
:class:`domain.errors.StoreError` when the store fails."""

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
    """A rising page: ``entries`` oldest first; ``exact`` when every entry newer than the bound is
    present, else PostgreSQL must read it."""

    entries: list[Entry]
    exact: bool


class Timelines(Protocol):
    """A family of timelines ``<prefix>:{<owner id>}``: sorted sets of :class:`Entry`, ``max_len``
    kept, complete for their window when they exist."""

    prefix: str
    max_len: int

    def key(self, owner: uuid.UUID) -> str:
        """The owner's timeline key."""
        ...

    async def add(self, owners: Sequence[uuid.UUID], entries: Sequence[Entry]) -> int:
        """Idempotently add ``entries`` to existing or rebuilding timelines; return how many
        written."""
        ...

    async def remove(self, owner: uuid.UUID, post_ids: Sequence[uuid.UUID]) -> int:
        """Remove posts from one owner's timeline; return how many it held."""
        ...

    async def remove_from_many(
        self, owners: Sequence[uuid.UUID], post_ids: Sequence[uuid.UUID]
    ) -> int:
        """Idempotently remove posts from ``owners``' timelines and rebuilds; return how many
        entries."""
        ...

    async def page(
        self, owners: Sequence[uuid.UUID], before: Entry | None, count: int
    ) -> list[list[Entry] | None]:
        """Per owner, up to ``count`` entries before ``before``, newest first; None if absent."""
        ...

    async def read_pages(
        self,
        wanted: Sequence[tuple[Timelines, uuid.UUID]],
        before: Entry | None,
        count: int,
        *,
        strict: bool = True,
    ) -> list[list[Entry] | StoreError | None]:
        """One :meth:`page` per ``(timelines, owner)`` in one round trip, refreshing TTLs; unless
        ``strict``, a failed node's StoreError stands in its place."""
        ...

    async def read_rising(
        self,
        wanted: Sequence[tuple[Timelines, uuid.UUID]],
        after: Entry | None,
        count: int,
        *,
        strict: bool = True,
    ) -> list[Rising | StoreError | None]:
        """As :meth:`read_pages`, upward: up to ``count`` entries strictly newer than ``after``
        (None: from the oldest), oldest first, as :class:`Rising`."""
        ...

    async def exists(self, owner: uuid.UUID) -> bool:
        """Whether the owner's timeline exists (is complete)."""
        ...

    async def drop(self, owner: uuid.UUID) -> None:
        """Delete the owner's timeline, so the next read rebuilds it."""
        ...

    async def drop_many(self, owners: Sequence[uuid.UUID], *, with_builds: bool = True) -> int:
        """Delete the timelines of ``owners`` (and rebuilds); return keys deleted."""
        ...

    async def rebuild(
        self, owner: uuid.UUID, load: Callable[[], Awaitable[Sequence[Entry]]]
    ) -> bool:
        """Rebuild a timeline from ``load()``, one at a time per owner; raises RebuildBusyError if
        held; False if the build vanished."""
        ...


@dataclass(frozen=True, slots=True)
class Engagement:
    """One like or comment on ``post_id``; ``ref`` is ``l:<liker>`` or ``c:<comment>``."""

    actor: uuid.UUID
    post_id: uuid.UUID
    author_id: uuid.UUID
    kind: str
    ref: str
    at: dt.datetime


class RankingSignals(Protocol):
    """The ranked feed's signals (docs/architecture/home-feed.md "Home feed"), read once per ranked
    window."""

    async def record(self, e: Engagement, *, now: dt.datetime) -> bool:
        """Record one engagement (idempotent); whether it was new in the velocity."""
        ...

    async def withdraw(self, post_id: uuid.UUID, ref: str) -> dt.datetime | None:
        """Take an engagement out of the velocity; return when it was counted (None: not held)."""
        ...

    async def read(
        self, viewer_id: uuid.UUID, authors: Mapping[uuid.UUID, uuid.UUID], now: dt.datetime
    ) -> Signals:
        """Every signal the score reads for ``authors`` ({post id: author id}), one round trip."""
        ...

    async def read_viewer(
        self, viewer_id: uuid.UUID, authors: Iterable[uuid.UUID], now: dt.datetime
    ) -> Signals:
        """The viewer's signals alone (close authors, preferred kind), one round trip."""
        ...

    async def forget_account(self, user_id: uuid.UUID) -> None:
        """Delete a purged account's ranking data (as viewer and author)."""
        ...


@dataclass(frozen=True, slots=True)
class Window:
    """A frozen ranked window: ``entries`` in rank order; ``tail`` the entry older posts continue
    from (None: nothing older)."""

    entries: list[Entry]
    tail: Entry | None


class RankedWindows(Protocol):
    """Frozen ranked windows with a TTL each read refreshes; found only with the viewer's id."""

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
    """Small string records with a TTL (a long job's saved place)."""

    async def get(self, key: str) -> dict[str, str]:
        """The record under ``key`` (empty when there is none)."""
        ...

    async def put(self, key: str, fields: Mapping[str, str], ttl_s: int) -> None:
        """Set ``fields`` of the record under ``key``; it expires ``ttl_s`` later."""
        ...

    async def delete(self, key: str) -> None:
        """Forget the record under ``key``."""
        ...
