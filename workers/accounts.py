"""The account lifecycle's periodic jobs (docs/api/account-lifecycle.md "Account
lifecycle")."""

from __future__ import annotations

import logging
import time
from typing import Any

from domain.accounts.exports import prune_exports
from domain.accounts.purge import prune_released_usernames, purge_due_accounts
from workers.deps import deps_of

log = logging.getLogger("roost.workers.accounts")

#: Share of JOB_TIMEOUT_S a purge run spends starting batches; the next run resumes.
PURGE_SHARE = 0.6


async def purge_accounts(ctx: dict[str, Any]) -> int:
    """Purge accounts whose deletion is due, within ``PURGE_SHARE`` of the time limit;
    return how many were purged to the end. Idempotent and resumable."""
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
