"""The pull authors each recent reader followed, per process: a guess that lets a home-feed
page read the pull authors' stores before PostgreSQL has said who they are
(domain.feed.read_feed checks it against the list the page's hydration reads)."""

from __future__ import annotations

import uuid
from collections import OrderedDict


class PullAuthorGuesses:
    """``get(viewer)`` the list last ``put`` for ``viewer`` (None: none), for the ``size``
    readers read most recently; older ones are forgotten."""

    def __init__(self, size: int = 20_000) -> None:
        self.size = size
        self._lists: OrderedDict[uuid.UUID, list[uuid.UUID]] = OrderedDict()

    def get(self, viewer: uuid.UUID) -> list[uuid.UUID] | None:
        found = self._lists.get(viewer)
        if found is not None:
            self._lists.move_to_end(viewer)
        return found

    def put(self, viewer: uuid.UUID, authors: list[uuid.UUID]) -> None:
        self._lists[viewer] = list(authors)
        self._lists.move_to_end(viewer)
        if len(self._lists) > self.size:
            self._lists.popitem(last=False)

    def __len__(self) -> int:
        return len(self._lists)
