"""Explore's knobs (docs/api/explore.md "Explore")."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


@dataclass(frozen=True)
class ExploreConfig:
    """Sizes are posts, durations timedeltas; ``namespace`` hash-tags the trending keys into one
    slot."""

    namespace: str = "trend"
    hours: int = 24  # the trending window, in hourly buckets (the current one partial)
    size: int = 1_000  # posts kept in each trending set (the candidates' pool)
    bucket_cap: int = 4_000  # posts kept in each hourly bucket
    window: int = 100  # candidates ranked per explore walk (the top of the pool)
    half_life: dt.timedelta = dt.timedelta(hours=24)  # of a candidate's age in its score
