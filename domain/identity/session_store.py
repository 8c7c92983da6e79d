"""The session cache's port: which sessions and accounts may act, answered in one round
trip per request (docs/api/sessions.md "Sessions"). PostgreSQL is the source of truth
(``sessions.revoked_at``, ``users.status``); the cache (``adapters.session_cache`` on
Redis) is told after each commit that ends a session or changes an account's status.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

#: Type of the real-time event that tells a user's sockets to re-check their session.
SESSION_EVENT = "session"


class Admission(enum.Enum):
    """Whether an access token's session may act now."""

    ADMITTED = "admitted"
    ENDED = "ended"  # the session was logged out, rotated past its grace, or revoked
    UNAVAILABLE = "unavailable"  # the account is banned or deleted


@dataclass(frozen=True, slots=True)
class Verdict:
    """An admission and whether this request was the user's first in the activity
    period (then ``users.last_active_at`` is due: domain.feed.activity)."""

    admission: Admission
    marked_active: bool = False


def verdict_of(status: str | None, live: bool, marked: bool = False) -> Verdict:
    """The verdict for an account ``status`` (None: no such account) and whether the
    session is ``live``."""
    if status != "active":
        return Verdict(Admission.UNAVAILABLE)
    return Verdict(Admission.ADMITTED if live else Admission.ENDED, marked)


class SessionStore(Protocol):
    """The session cache. Every method raises :class:`domain.errors.StoreError` when the
    cache fails: callers fall back to PostgreSQL."""

    async def admit(self, user_id: uuid.UUID, session_id: uuid.UUID) -> Verdict | None:
        """The cached verdict of the session, marking the user active when admitted
        (``SET NX`` of the activity marker, domain.feed.activity); None when the cache
        does not know (read PostgreSQL, then :meth:`fill`)."""
        ...

    async def fill(
        self, user_id: uuid.UUID, session_id: uuid.UUID, status: str | None, live: bool
    ) -> Verdict:
        """Cache what PostgreSQL said (without overwriting an ended session or a status
        written meanwhile) and return the verdict then in the cache."""
        ...

    async def end(
        self,
        user_id: uuid.UUID,
        session_ids: Iterable[uuid.UUID] = (),
        *,
        status: str | None = None,
    ) -> None:
        """Mark ``session_ids`` ended (and the account ``status``, if given) after
        PostgreSQL committed it, and tell the user's open sockets (a
        :data:`SESSION_EVENT` on their channel)."""
        ...
