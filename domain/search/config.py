"""The knobs of user search and suggested follows (settings:
docs/operations/configuration.md "Configuration")."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


@dataclass(frozen=True)
class SearchConfig:
    """``max_results``: the longest ranked list one search or suggestion list freezes
    (the pages a client can reach); ``snapshot_ttl``: how long a frozen list serves its
    next pages; ``fuzzy_threshold``: the pg_trgm similarity (0-1) a typo must reach;
    ``suggest_followees``: the viewer's most recent followees whose follows are read;
    ``suggest_per_followee``: the most recent follows read of each of them."""

    max_results: int = 500
    snapshot_ttl: dt.timedelta = dt.timedelta(minutes=10)
    fuzzy_threshold: float = 0.45
    suggest_followees: int = 200
    suggest_per_followee: int = 50
