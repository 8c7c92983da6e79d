"""The account lifecycle's knobs (docs/operations/configuration.md "Configuration")."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


@dataclass(frozen=True)
class AccountsConfig:
    """``deletion_grace``, ``export_link_ttl``, ``export_retention``, ``purge_batch`` rows per
    transaction, ``public_base_url`` of links (None: the request's), ``username_hold`` of a
    purged name."""

    deletion_grace: dt.timedelta = dt.timedelta(days=30)
    export_link_ttl: dt.timedelta = dt.timedelta(minutes=15)
    export_retention: dt.timedelta = dt.timedelta(hours=48)
    purge_batch: int = 1_000
    public_base_url: str | None = None
    username_hold: dt.timedelta = dt.timedelta(days=30)
