"""Explore's order for one viewer: a pure function of the trending candidates, the
viewer's ranking signals and a clock (docs/api/explore.md "Explore";
docs/seeds/chroma-architecture.md "Explore and the Reels discovery feed": the trending
score, then a lightweight re-scoring with the proximity and preference signals).

``score = (1 + engagements) × 2 ** (-age / half_life) × proximity × preference``:

- **engagements**: the post's likes and comments in the trending window (24 hours);
- **age** of the post (half-life 24 hours; a post "from the future" counts as age 0);
- **proximity** ×1.5 when the viewer liked or commented on a post of the author in the
  last 30 days, **preference** ×1.2 when the post's media kind is the one most of the
  viewer's last 20 interactions were: the ranked home feed's signals and boosts
  (:mod:`domain.feed.ranking`).

Posts of accounts the viewer does not follow come first (the discovery part), then
those of accounts they follow (the fallback, so a viewer who follows everyone still
gets a page while posts trend); within each, highest score first, equal scores newest
first.
"""

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
    """``candidates`` in explore order: not followed before followed, then by score,
    highest first, equal scores newest first."""
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
