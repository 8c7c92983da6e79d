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
from collections.abc import Mapping, Sequence

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
    age_us = max(score_of(now) - c.entry.score, 0)
    half_life_us = config.half_life / dt.timedelta(microseconds=1)
    value: float = (1.0 + max(engagements, 0)) * 2.0 ** (-age_us / half_life_us)
    if c.author_id in signals.close_authors and c.author_id != viewer_id:
        value *= boosts.proximity_boost
    if signals.preferred is not None and c.kind == signals.preferred:
        value *= boosts.preference_boost
    return value


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

    def key(c: CandidateFacts) -> tuple[bool, float, int, uuid.UUID]:
        s = explore_score(
            c, engagements.get(c.entry.post_id, 0), signals, viewer_id, now, config, boosts
        )
        return (not c.followed, s, c.entry.score, c.entry.post_id)

    return sorted(candidates, key=key, reverse=True)
