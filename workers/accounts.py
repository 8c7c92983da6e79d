"""The account lifecycle's periodic jobs (README "Account lifecycle"): purging accounts
whose deletion is due, and deleting expired data exports."""

from __future__ import annotations

import logging
import time
from typing import Any

from domain.accounts.exports import prune_exports
from domain.accounts.purge import purge_due_accounts

log = logging.getLogger("roost.workers.accounts")

#: The purge job's time limit (arq ``timeout``); it stops starting batches this much
#: earlier and the next run resumes.
PURGE_TIMEOUT_S = 300
PURGE_MARGIN_S = 60


async def purge_accounts(ctx: dict[str, Any]) -> int:
    """Purge the personal data of every account whose deletion is due (domain.accounts.
    purge), within the job's time limit; return how many were purged to the end.
    Idempotent and resumable: a run cut short (time, crash) is continued by the next."""
    settings = ctx["settings"]
    run = await purge_due_accounts(
        ctx["engine"],
        settings.accounts_config,
        counter_shards=settings.counter_shards,
        stores=ctx.get("feed_stores"),
        feed_config=settings.feed_config,
        deadline=time.monotonic() + PURGE_TIMEOUT_S - PURGE_MARGIN_S,
    )
    if run.purged or run.unfinished:
        log.info(
            "purged %d deleted accounts%s",
            len(run.purged),
            " (more to do: the next run resumes)" if run.unfinished else "",
        )
    return len(run.purged)


async def prune_data_exports(ctx: dict[str, Any]) -> int:
    """Delete the data export archives past their expiry; return how many."""
    pruned = await prune_exports(ctx["engine"])
    if pruned:
        log.info("deleted %d expired data exports", pruned)
    return pruned
