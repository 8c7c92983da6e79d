"""Cached timelines after the bulk commit: drop the stale ones, warm a few for the tail."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.feed.config import FeedStores
from domain.feed.ports import RebuildBusyError
from domain.feed.sources import home_entries_sql
from domain.feed.timelines import Entry
from domain.progress import Progress, counted, no_progress
from domain.visibility.predicates import is_live

#: Users whose timelines are dropped / warmed per Redis round trip.
REDIS_BATCH = 1000


async def _drop_timelines(
    engine: AsyncEngine, stores: FeedStores, authors: Sequence[uuid.UUID]
) -> int:
    """Delete the cached feeds of the authors and of everyone following them, and the
    authors' recent-posts stores (with any rebuild in progress): they are missing the
    bulk posts, and missing timelines are rebuilt on read. Returns keys deleted."""
    async with engine.connect() as conn:
        followers = (
            await conn.execute(
                text(
                    "SELECT DISTINCT follower_id FROM follows"
                    f" WHERE followee_id = ANY(CAST(:a AS uuid[])) AND {is_live()}"
                ),
                {"a": list(authors)},
            )
        ).scalars()
        feed_owners = sorted(set(followers) | set(authors), key=lambda u: u.bytes)
    deleted = 0
    for store, owners in ((stores.feeds, feed_owners), (stores.author_posts, list(authors))):
        for i in range(0, len(owners), REDIS_BATCH):
            deleted += await store.drop_many(owners[i : i + REDIS_BATCH])
    return deleted


async def _warm(
    engine: AsyncEngine,
    stores: FeedStores,
    owners: Sequence[uuid.UUID],
    progress: Progress = no_progress,
) -> int:
    """Rebuild the feeds of ``owners`` from PostgreSQL (as a first read would),
    reporting each to ``progress`` (step "warm feeds")."""
    warmed = 0
    for owner in counted(owners, progress, "warm feeds", len(owners), unit="feeds", every=10):

        async def load(owner: uuid.UUID = owner) -> list[Entry]:
            async with engine.connect() as conn:
                return await home_entries_sql(conn, owner, before=None, limit=stores.feeds.max_len)

        try:
            if await stores.feeds.rebuild(owner, load):
                warmed += 1
        except RebuildBusyError:  # a reader is rebuilding it right now: same result
            pass
    return warmed
