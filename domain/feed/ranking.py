"""The ranked home feed's score, a pure function of a post, the viewer's signals and a
clock (docs/architecture/home-feed.md "Ranked order"):

``score = (recency + engagement_weight * engagement) * proximity * preference`` with
recency ``2 ** (-age / half_life)`` (age >= 0), engagement ``n / (1 + n)`` for
``n = velocity / (author_rate + rate_prior)`` (:func:`decayed_rate`), proximity 1.5 when
the viewer engaged with the author in 30 days (never for their own posts), preference
1.2 for the viewer's :func:`preferred_kind`. Equal scores order newest first.
"""

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


#: The media kinds a post can be: ``video`` if it holds a video, else ``image`` if it
#: holds media, else ``text`` (domain.feed.ranking_queries.KIND_SQL). Preferences are
#: only ever for a media kind.
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
    #: Time constant of the author's decayed engagement count (its average rate is the
    #: count divided by this).
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
    """A post of the candidate window: its timeline entry (``created_at`` µs, id), its
    author and its media kind (``image``, ``video`` or ``text``). A tuple: a window
    makes 100 per first page."""

    entry: Entry
    author_id: uuid.UUID
    kind: str


@dataclass(frozen=True)
class Signals:
    """What the score reads besides the post: ``velocity`` (engagements in the last
    hour), ``author_rate`` (per hour), ``close_authors`` (30 days) and ``preferred``
    media kind; missing keys count 0."""

    velocity: Mapping[uuid.UUID, int] = field(default_factory=dict)
    author_rate: Mapping[uuid.UUID, float] = field(default_factory=dict)
    close_authors: frozenset[uuid.UUID] = frozenset()
    preferred: str | None = None


def preferred_kind(kinds: Sequence[str], config: RankingConfig) -> str | None:
    """The media kind that strictly more than half of the viewer's last interactions
    (``kinds``, at most ``preference_sample`` of them) were, or None: too few
    interactions (< ``preference_min``), no majority, or a majority of text posts."""
    recent = list(kinds)[-config.preference_sample :]
    if len(recent) < config.preference_min:
        return None
    kind, count = Counter(recent).most_common(1)[0]
    return kind if kind in MEDIA_KINDS and 2 * count > len(recent) else None


def recency(age: dt.timedelta, half_life: dt.timedelta) -> float:
    """``2 ** (-age / half_life)`` in (0, 1]; a negative age counts as 0."""
    return float(2.0 ** (-max(age, dt.timedelta(0)) / half_life))


def engagement(velocity: float, author_rate: float, rate_prior: float) -> float:
    """``n / (1 + n)`` with ``n = velocity / (author_rate + rate_prior)``: 0 without
    engagement, 0.5 when the last hour matched the author's average (plus the prior),
    approaching 1 for a burst far above it."""
    n = max(velocity, 0.0) / (max(author_rate, 0.0) + rate_prior)
    return n / (1.0 + n)


def decayed_rate(count: float, at: dt.datetime, now: dt.datetime, horizon: dt.timedelta) -> float:
    """The author's engagements per hour: ``count`` (as of ``at``, decaying by ``e``
    every ``horizon``) decayed to ``now``, over ``horizon`` in hours."""
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
    """:func:`score` with its constants computed once (ages in µs, as entries hold
    them): a window scores 100 candidates."""
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
