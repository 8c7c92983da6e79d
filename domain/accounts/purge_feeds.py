"""The Redis part of a purge: the account's posts out of followers' feeds, its timelines gone."""

from __future__ import annotations

import datetime as dt
import time
import uuid

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import utcnow
from domain.feed.config import FeedConfig, FeedStores
from domain.feed.sources import active_followers_page, author_recent_entries

#: Feed keys times members one removal script may touch (a few ms of Redis per 10,000).
MAX_REMOVALS_PER_CALL = 100_000
#: How long a purge's progress through the followers is remembered between runs.
PROGRESS_TTL_S = 86_400


def progress_key(author_id: uuid.UUID) -> str:
    """``purge:{<author id>}``: a cut-short purge's place, beside the author's keys."""
    return f"purge:{{{author_id}}}"


async def purge_author_feeds(
    engine: AsyncEngine,
    stores: FeedStores,
    config: FeedConfig,
    author_id: uuid.UUID,
    *,
    deadline: float | None = None,
) -> bool:
    """Remove the author's newest ``2 × max_len`` posts from active followers' feeds, then its own
    timelines. True when done, False past ``deadline`` (monotonic; place kept in
    :func:`progress_key`). Idempotent; raises DBAPIError / StoreError."""
    key = progress_key(author_id)
    state = await stores.marks.get(key)
    if "done" not in state:
        async with engine.connect() as conn:
            entries = await author_recent_entries(conn, author_id, limit=config.max_len * 2)
        post_ids = [e.post_id for e in entries]
        after = (
            (dt.datetime.fromisoformat(state["ts"]), uuid.UUID(state["id"]))
            if "ts" in state
            else None
        )
        per_call = max(1, MAX_REMOVALS_PER_CALL // max(1, len(post_ids)))
        active_since = utcnow() - config.active_window
        while post_ids:
            async with engine.connect() as conn:
                targets, after = await active_followers_page(
                    conn, author_id, active_since=active_since, after=after, limit=config.batch_size
                )
            for i in range(0, len(targets), per_call):
                await stores.feeds.remove_from_many(targets[i : i + per_call], post_ids)
            if after is None:
                break
            if deadline is not None and time.monotonic() > deadline:
                progress = {"ts": after[0].isoformat(), "id": str(after[1])}
                await stores.marks.put(key, progress, PROGRESS_TTL_S)
                return False
        await stores.marks.put(key, {"done": "1"}, PROGRESS_TTL_S)
    await stores.feeds.drop(author_id)
    await stores.author_posts.drop(author_id)
    return True


async def forget_progress(stores: FeedStores, author_id: uuid.UUID) -> None:
    """Drop the purge's saved place."""
    await stores.marks.delete(progress_key(author_id))
