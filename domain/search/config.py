"""User search and suggestion knobs (docs/operations/configuration.md "Configuration")."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


@dataclass(frozen=True)
class SearchConfig:
    """``max_results`` frozen per list, ``snapshot_ttl``, ``fuzzy_threshold`` (pg_trgm 0-1),
    ``suggest_followees`` and ``suggest_per_followee`` read."""

    max_results: int = 500
    snapshot_ttl: dt.timedelta = dt.timedelta(minutes=10)
    fuzzy_threshold: float = 0.45
    suggest_followees: int = 200
    suggest_per_followee: int = 50
