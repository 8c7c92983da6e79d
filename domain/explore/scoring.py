"""Explore's order for one viewer (docs/api/explore.md "Explore"):
``(1 + engagements) × 2 ** (-age / half_life) × proximity × preference``, with the ranked home
feed's boosts (:mod:`domain.feed.ranking`); unfollowed authors first, then followed, each by
score, ties newest first."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Mapping, Sequence

from domain.explore.config import ExploreConfig
from domain.explore.queries import CandidateFacts
from domain.feed.ranking import RankingConfig, Signals
from domain.feed.timelines.entries import score_of


def explore_score(
    c: CandidateFacts,
    engagements: int,
    signals: Signals,
    viewer_id: uuid.UUID,
    now: dt.datetime,
    config: ExploreConfig,
    boosts: RankingConfig,
) -> float:
    """The score of one candidate (see the module)."""
    return _scorer({c.entry.post_id: engagements}, signals, viewer_id, now, config, boosts)(c)


def rank_explore(
    candidates: Sequence[CandidateFacts],
    engagements: Mapping[uuid.UUID, int],
    signals: Signals,
    viewer_id: uuid.UUID,
    now: dt.datetime,
    config: ExploreConfig,
    boosts: RankingConfig,
) -> list[CandidateFacts]:
    """``candidates`` in explore order: unfollowed first, then score, ties newest first."""
    scored = _scorer(engagements, signals, viewer_id, now, config, boosts)
    return sorted(candidates, key=lambda c: (not c.followed, scored(c), c.entry), reverse=True)


def _scorer(
    engagements: Mapping[uuid.UUID, int],
    signals: Signals,
    viewer_id: uuid.UUID,
    now: dt.datetime,
    config: ExploreConfig,
    boosts: RankingConfig,
) -> Callable[[CandidateFacts], float]:
    """The score with its constants computed once: a window scores 100 candidates."""
    now_us = score_of(now)
    half_life_us = config.half_life / dt.timedelta(microseconds=1)
    close, preferred = signals.close_authors, signals.preferred
    proximity, preference = boosts.proximity_boost, boosts.preference_boost

    def scored(c: CandidateFacts) -> float:
        entry, author = c.entry, c.author_id
        age = now_us - entry.score
        n = engagements.get(entry.post_id, 0)
        value: float = (1.0 + (n if n > 0 else 0)) * 2.0 ** (
            -(age if age > 0 else 0) / half_life_us
        )
        if author in close and author != viewer_id:
            value *= proximity
        if preferred is not None and c.kind == preferred:
            value *= preference
        return value

    return scored
