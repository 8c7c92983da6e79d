"""Periodic compaction of the sharded counters (docs/design.md "Data")."""

from __future__ import annotations

import logging
from typing import Any

from domain.counters import compact
from workers.deps import deps_of

log = logging.getLogger("roost.workers.counters")


async def compact_counters(ctx: dict[str, Any]) -> int:
    """Fold every counter's shards into shard 0 (:func:`domain.counters.compact`);
    return how many counters were folded."""
    folded = await compact(deps_of(ctx).engine)
    if folded:
        log.info("compacted %d counters", folded)
    return folded
