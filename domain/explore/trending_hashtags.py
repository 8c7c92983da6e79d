"""Use case: hashtags trending for one viewer (docs/api/explore.md "Explore"): tags of the pool's
top posts the viewer may see in explore, ranked by engagements from unfollowed then followed
authors."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.explore.queries import hashtags_of
from domain.feed.config import FeedConfig, FeedStores

#: Visible candidate ids: ``{post id: viewer follows its author}``.
Followed = Callable[[Sequence[uuid.UUID]], Awaitable[dict[uuid.UUID, bool]]]


@dataclass(frozen=True, slots=True)
class TagTrend:
    """A tag: ``posts`` visible trending posts carry it, ``engagements`` in the window
    (``discovery`` from unfollowed)."""

    name: str
    posts: int
    engagements: int
    discovery: int


async def trending_hashtags(
    engine: AsyncEngine,
    stores: FeedStores,
    config: FeedConfig,
    *,
    first: int,
    visible: Followed,
    now: dt.datetime,
) -> list[TagTrend]:
    """Up to ``first`` tags, most trending first (ties by name). Raises StoreError."""
    if first <= 0:
        return []
    pooled = dict(await stores.trending.top("all", config.explore.window, now))
    if not pooled:
        return []
    seen = await visible(list(pooled))
    if not seen:
        return []
    tags = await hashtags_of(engine, list(seen))
    trends: dict[str, list[int]] = {}
    for post_id, names in tags.items():
        n, followed = pooled.get(post_id, 0), seen[post_id]
        for name in dict.fromkeys(names):
            t = trends.setdefault(name, [0, 0, 0])
            t[0] += 1
            t[1] += n
            t[2] += 0 if followed else n
    ranked = sorted(trends.items(), key=lambda kv: (-kv[1][2], -kv[1][1], -kv[1][0], kv[0]))
    return [TagTrend(name, p, e, d) for name, (p, e, d) in ranked[:first]]
