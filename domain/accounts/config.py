"""The account lifecycle's knobs (docs/operations/configuration.md "Configuration",
"Account lifecycle")."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


@dataclass(frozen=True)
class AccountsConfig:
    """``deletion_grace``: how long an account its owner deleted can still be restored
    before the purge; ``export_link_ttl``: how long a download link of a data export
    works; ``export_retention``: how long a prepared archive is kept; ``purge_batch``:
    rows per purge transaction; ``public_base_url``: the origin download links name
    (None: the request's own)."""

    deletion_grace: dt.timedelta = dt.timedelta(days=30)
    export_link_ttl: dt.timedelta = dt.timedelta(minutes=15)
    export_retention: dt.timedelta = dt.timedelta(hours=48)
    purge_batch: int = 1_000
    public_base_url: str | None = None
