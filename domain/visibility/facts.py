"""The facts the visibility rule decides on: protocols the dataloaders' records satisfy
as they are, and the viewer's relations (:class:`Viewer`).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

#: The only account status whose account and content anyone may see.
ACTIVE = "active"


class AccountFacts(Protocol):
    """An account: ``status`` is ``active``, ``banned``, ``pending_deletion`` (its owner
    is deleting it) or ``deleted``."""

    @property
    def id(self) -> uuid.UUID: ...
    @property
    def status(self) -> str: ...
    @property
    def is_private(self) -> bool: ...


#: The only post state anyone but its author may see (docs/api/media.md "Media").
PUBLISHED = "published"
#: The states its author sees their own post in, with its state: still being processed,
#: or failed (with a reason).
AUTHOR_ONLY = frozenset({"processing", "failed"})


class PostFacts(Protocol):
    """A post: its author, whether (since when) it is deleted, and its ``state``
    (``processing``, ``published``, ``failed`` or ``removed``)."""

    @property
    def id(self) -> uuid.UUID: ...
    @property
    def author_id(self) -> uuid.UUID: ...
    @property
    def deleted_at(self) -> dt.datetime | None: ...
    @property
    def state(self) -> str: ...


class CommentFacts(Protocol):
    """A comment; ``parent_id`` is the top-level comment a reply answers (None for one)."""

    @property
    def id(self) -> uuid.UUID: ...
    @property
    def post_id(self) -> uuid.UUID: ...
    @property
    def author_id(self) -> uuid.UUID: ...
    @property
    def parent_id(self) -> uuid.UUID | None: ...
    @property
    def deleted_at(self) -> dt.datetime | None: ...


class NotificationFacts(Protocol):
    """A notification: whose it is, who did it (None for a digest), and ``count``, the
    people behind it (0: every one of them withdrew, so it shows to nobody)."""

    @property
    def recipient_id(self) -> uuid.UUID: ...
    @property
    def actor_id(self) -> uuid.UUID | None: ...
    @property
    def count(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who is looking (``id`` None: anonymous) and, among the accounts decided on, those
    ``blocked`` either way, ``follows`` (live) and ``muted``; an account missing from a
    set is not.
    """

    id: uuid.UUID | None
    blocked: frozenset[uuid.UUID] = frozenset()
    follows: frozenset[uuid.UUID] = frozenset()
    muted: frozenset[uuid.UUID] = frozenset()

    @classmethod
    def anonymous(cls) -> Viewer:
        """A reader who is not signed in: no blocks, no follows."""
        return cls(None)

    @classmethod
    def of(
        cls,
        viewer_id: uuid.UUID | None,
        *,
        blocked: Iterable[uuid.UUID] = (),
        follows: Iterable[uuid.UUID] = (),
        muted: Iterable[uuid.UUID] = (),
    ) -> Viewer:
        """Build a viewer from any iterables of ids (anonymous: no relations kept)."""
        if viewer_id is None:
            return cls(None)
        return cls(viewer_id, frozenset(blocked), frozenset(follows), frozenset(muted))
