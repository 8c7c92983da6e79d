"""The account lifecycle's periodic jobs (docs/api/account-lifecycle.md "Account
lifecycle"): purging accounts whose deletion is due, deleting expired data exports and
forgetting the usernames whose hold is over."""

from __future__ import annotations

import logging
import time
from typing import Any

from domain.accounts.exports import prune_exports
from domain.accounts.purge import prune_released_usernames, purge_due_accounts
from workers.deps import deps_of

log = logging.getLogger("roost.workers.accounts")

#: Share of the job's time limit (JOB_TIMEOUT_S: the limit of every job, since arq keeps
#: a crashed job's in-progress key for the longest limit plus 10 s) that a purge run
#: spends starting batches; the next run (every minute) resumes where it stopped.
PURGE_SHARE = 0.6


async def purge_accounts(ctx: dict[str, Any]) -> int:
    """Purge the personal data of accounts whose deletion is due (domain.accounts.purge)
    for at most ``PURGE_SHARE`` of the job's time limit; return how many were purged to
    the end. Idempotent and resumable: a run cut short (time, crash) is continued by the
    next."""
    deps = deps_of(ctx)
    settings = deps.settings
    run = await purge_due_accounts(
        deps.engine,
        settings.accounts_config,
        counter_shards=settings.counter_shards,
        stores=deps.stores,
        feed_config=settings.feed_config,
        deadline=time.monotonic() + settings.job_timeout_s * PURGE_SHARE,
        media_store=deps.media.store if deps.media is not None else None,
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
    pruned = await prune_exports(deps_of(ctx).engine)
    if pruned:
        log.info("deleted %d expired data exports", pruned)
    return pruned


async def prune_released_names(ctx: dict[str, Any]) -> int:
    """Forget the purged accounts' usernames whose hold is over; return how many."""
    pruned = await prune_released_usernames(deps_of(ctx).engine)
    if pruned:
        log.info("released %d held usernames", pruned)
    return pruned
