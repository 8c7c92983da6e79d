"""The ranked home feed's score (docs/architecture/home-feed.md "Ranked order"):
``(recency + engagement_weight * engagement) * proximity * preference``, recency
``2 ** (-age / half_life)``, proximity for authors engaged with in 30 days (never one's own
posts), preference for :func:`preferred_kind`; ties newest first."""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from domain.feed.timelines.entries import Entry, score_of

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def ms_of(at: dt.datetime) -> int:
    """``at`` as whole milliseconds since the Unix epoch."""
    return (at - _EPOCH) // dt.timedelta(milliseconds=1)


def time_of_uuid7(value: uuid.UUID) -> dt.datetime:
    """The creation time of a UUIDv7 (its first 48 bits: ms since the epoch)."""
    return _EPOCH + dt.timedelta(milliseconds=value.int >> 80)


#: ``video`` if it holds a video, else ``image`` with media, else ``text``.
MEDIA_KINDS = ("image", "video")
TEXT = "text"

_MICROSECOND = dt.timedelta(microseconds=1)
_HOUR_US = 3_600_000_000


@dataclass(frozen=True)
class RankingConfig:
    """The ranked feed's knobs; durations are timedeltas, sizes are entries."""

    half_life: dt.timedelta = dt.timedelta(hours=6)
    engagement_weight: float = 0.5
    velocity_window: dt.timedelta = dt.timedelta(hours=1)
    #: Time constant of the author's decayed engagement count.
    author_rate_horizon: dt.timedelta = dt.timedelta(hours=24)
    rate_prior: float = 1.0  # engagements per hour added to every author's average
    proximity_boost: float = 1.5
    proximity_window: dt.timedelta = dt.timedelta(days=30)
    proximity_cap: int = 200  # authors kept per viewer, most recent interaction first
    preference_boost: float = 1.2
    preference_sample: int = 20  # the viewer's last interactions a preference reads
    preference_min: int = 5  # fewer interactions than this: no preference yet
    window: int = 100  # candidates ranked (the newest entries of the feed)
    freeze: dt.timedelta = dt.timedelta(minutes=5)  # a ranked window's idle lifetime


class Candidate(NamedTuple):
    """A candidate post: its entry (``created_at`` µs, id), author and media kind."""

    entry: Entry
    author_id: uuid.UUID
    kind: str


@dataclass(frozen=True)
class Signals:
    """What the score reads besides the post: ``velocity`` (last hour), ``author_rate`` (per hour),
    ``close_authors``, ``preferred``; missing keys count 0."""

    velocity: Mapping[uuid.UUID, int] = field(default_factory=dict)
    author_rate: Mapping[uuid.UUID, float] = field(default_factory=dict)
    close_authors: frozenset[uuid.UUID] = frozenset()
    preferred: str | None = None


def preferred_kind(kinds: Sequence[str], config: RankingConfig) -> str | None:
    """The media kind of over half the viewer's last interactions; None under ``preference_min``,
    without a majority, or for text."""
    recent = list(kinds)[-config.preference_sample :]
    if len(recent) < config.preference_min:
        return None
    kind, count = Counter(recent).most_common(1)[0]
    return kind if kind in MEDIA_KINDS and 2 * count > len(recent) else None


def recency(age: dt.timedelta, half_life: dt.timedelta) -> float:
    """``2 ** (-age / half_life)`` in (0, 1]; a negative age counts as 0."""
    return float(2.0 ** (-max(age, dt.timedelta(0)) / half_life))


def engagement(velocity: float, author_rate: float, rate_prior: float) -> float:
    """``n / (1 + n)`` with ``n = velocity / (author_rate + rate_prior)``, in [0, 1)."""
    n = max(velocity, 0.0) / (max(author_rate, 0.0) + rate_prior)
    return n / (1.0 + n)


def decayed_rate(count: float, at: dt.datetime, now: dt.datetime, horizon: dt.timedelta) -> float:
    """Engagements per hour: ``count`` at ``at`` decayed (e-fold per ``horizon``) to ``now``, over
    ``horizon``."""
    return decayed_rate_us(count, score_of(at), score_of(now), horizon // _MICROSECOND)


def decayed_rate_us(count: float, at_us: int, now_us: int, horizon_us: int) -> float:
    """:func:`decayed_rate` with times and horizon in whole microseconds."""
    elapsed = max((now_us - at_us) / horizon_us, 0.0)
    return count * math.exp(-elapsed) / (horizon_us / _HOUR_US)


def score(
    c: Candidate, signals: Signals, viewer_id: uuid.UUID, now: dt.datetime, config: RankingConfig
) -> float:
    """The score of one candidate for ``viewer_id`` at ``now`` (see the module)."""
    return _scorer(signals, viewer_id, now, config)(c)


def rank(
    candidates: Sequence[Candidate],
    signals: Signals,
    viewer_id: uuid.UUID,
    now: dt.datetime,
    config: RankingConfig,
) -> list[Candidate]:
    """``candidates`` by score, highest first; equal scores newest first."""
    scored = _scorer(signals, viewer_id, now, config)
    return sorted(candidates, key=lambda c: (scored(c), c.entry), reverse=True)


def _scorer(
    signals: Signals, viewer_id: uuid.UUID, now: dt.datetime, config: RankingConfig
) -> Callable[[Candidate], float]:
    """:func:`score` with its constants precomputed (ages in µs)."""
    now_us = score_of(now)
    half_life_us = config.half_life / dt.timedelta(microseconds=1)
    velocity, rates, close = signals.velocity, signals.author_rate, signals.close_authors
    preferred, weight, prior = signals.preferred, config.engagement_weight, config.rate_prior
    proximity, preference = config.proximity_boost, config.preference_boost

    def scored(c: Candidate) -> float:
        entry, author = c.entry, c.author_id
        age = now_us - entry.score
        base: float = 2.0 ** (-(age if age > 0 else 0) / half_life_us)
        v = velocity.get(entry.post_id)
        if v:
            base += weight * engagement(v, rates.get(author, 0.0), prior)
        if author in close and author != viewer_id:
            base *= proximity
        if preferred is not None and c.kind == preferred:
            base *= preference
        return base

    return scored
