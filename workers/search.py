"""The periodic refresh of people search's ranking signal (docs/api/search.md "User search")."""

from __future__ import annotations

import logging
from typing import Any

from domain.search.ranks import refresh_search_ranks
from workers.deps import deps_of

log = logging.getLogger("roost.workers.search")


async def refresh_search_ranks_job(ctx: dict[str, Any]) -> int:
    """Copy exact follower counts into ``user_search.followers``; return how many
    changed. Idempotent."""
    changed = await refresh_search_ranks(deps_of(ctx).engine)
    if changed:
        log.info("search ranks: %d users' follower counts refreshed", changed)
    return changed
