"""The session cache's port (docs/api/sessions.md "Sessions"): PostgreSQL is the truth; the cache is
told after each commit that ends a session or changes a status."""

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
    """An admission and whether this request first marked the user active (domain.feed.activity)."""

    admission: Admission
    marked_active: bool = False


def verdict_of(status: str | None, live: bool, marked: bool = False) -> Verdict:
    """The verdict for ``status`` (None: no account) and a ``live`` session."""
    if status != "active":
        return Verdict(Admission.UNAVAILABLE)
    return Verdict(Admission.ADMITTED if live else Admission.ENDED, marked)


class SessionStore(Protocol):
    """The session cache; every method raises :class:`domain.errors.StoreError` when it fails."""

    async def admit(self, user_id: uuid.UUID, session_id: uuid.UUID) -> Verdict | None:
        """The cached verdict, marking the user active when admitted; None when unknown (read
        PostgreSQL, then :meth:`fill`)."""
        ...

    async def fill(
        self, user_id: uuid.UUID, session_id: uuid.UUID, status: str | None, live: bool
    ) -> Verdict:
        """Cache PostgreSQL's answer (never over a newer end or status); return the cached
        verdict."""
        ...

    async def end(
        self,
        user_id: uuid.UUID,
        session_ids: Iterable[uuid.UUID] = (),
        *,
        status: str | None = None,
    ) -> None:
        """Mark ``session_ids`` (and ``status``) ended after the commit and send
        :data:`SESSION_EVENT`."""
        ...
