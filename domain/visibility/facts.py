"""The facts the visibility rule decides on, and the viewer's relations."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

#: The only account status whose account and content anyone may see.
ACTIVE = "active"


class AccountFacts(Protocol):
    """An account; ``status`` ``active``, ``banned``, ``pending_deletion`` or ``deleted``."""

    @property
    def id(self) -> uuid.UUID: ...
    @property
    def status(self) -> str: ...
    @property
    def is_private(self) -> bool: ...


#: The only post state anyone but its author may see (docs/api/media.md "Media").
PUBLISHED = "published"
#: The extra states an author sees their own post in.
AUTHOR_ONLY = frozenset({"processing", "failed"})


class PostFacts(Protocol):
    """A post: author, ``deleted_at``, ``state`` (``processing``, ``published``, ``failed``,
    ``removed``)."""

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
    """A notification: recipient, actor (None: digest), ``count`` (0: shows to nobody)."""

    @property
    def recipient_id(self) -> uuid.UUID: ...
    @property
    def actor_id(self) -> uuid.UUID | None: ...
    @property
    def count(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who looks (``id`` None: anonymous) and which decided accounts are ``blocked``, ``follows``,
    ``muted``."""

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
