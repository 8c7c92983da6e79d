"""Timeline entries: a post as (score, member), ordered like ``(created_at, id)``."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass

from domain.keyset import Position

SENTINEL = b""
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def sentinel_score(run: int, *, whole: bool) -> int:
    """The sentinel's score: ``-(2 * run + whole)`` (exact in a double)."""
    return -(2 * run + int(whole))


def sentinel_parts(score: int | float | bytes) -> tuple[int, bool]:
    """``(run, whole)`` of a sentinel's score (see :func:`sentinel_score`)."""
    n = -int(float(score))
    return n // 2, bool(n % 2)


def score_of(ts: dt.datetime) -> int:
    """Return ``ts`` as whole microseconds since the Unix epoch (the timeline score)."""
    return (ts - _EPOCH) // dt.timedelta(microseconds=1)


def time_of(score: int | float) -> dt.datetime:
    """Inverse of :func:`score_of`."""
    return _EPOCH + dt.timedelta(microseconds=int(score))


@dataclass(frozen=True, order=True, slots=True)
class Entry:
    """A timeline entry; entries order by (score, post_id) like ``(created_at, id)``."""

    score: int
    post_id: uuid.UUID

    @property
    def member(self) -> bytes:
        """The sorted-set member: the UUID's 16 bytes."""
        return self.post_id.bytes

    @classmethod
    def of(cls, created_at: dt.datetime, post_id: uuid.UUID) -> Entry:
        """Build the entry of a post from its ``created_at`` and id."""
        return cls(score_of(created_at), post_id)

    @property
    def position(self) -> Position:
        """The entry as the keyset position of its post: ``(created_at, id)``."""
        return time_of(self.score), self.post_id
