"""The daily follow digest of notifications (docs/api/notifications.md "Notifications")."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from domain.db import utcnow
from domain.notifications.follows import prune_sources, send_follow_digests
from workers.deps import deps_of

log = logging.getLogger("roost.workers.notifications")


async def follow_digest(ctx: dict[str, Any], day: str | None = None) -> int:
    """Send the follow digests of UTC ``day`` (ISO; default yesterday), idempotently,
    and prune old records; return how many digests were created."""
    deps = deps_of(ctx)
    config = deps.settings.notification_config
    delivery = deps.delivery
    if delivery is None:
        raise RuntimeError("the worker was built without its notification Delivery")
    today = utcnow().date()
    target = dt.date.fromisoformat(day) if day else today - dt.timedelta(days=1)
    changes = await send_follow_digests(deps.engine, config, target)
    await delivery.deliver(changes)
    pruned = await prune_sources(deps.engine, today - config.source_retention)
    if changes.created or pruned:
        log.info(
            "follow digests of %s: %d sent; %d old records pruned",
            target,
            len(changes.created),
            pruned,
        )
    return len(changes.created)
