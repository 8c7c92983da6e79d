"""Bulk seed of posts over the users already loaded (``roost seed-posts``; ``roost run``
after the first graph load).

A month of synthetic history with a realistic spread of activity, so the home feed
has something to show on the real follow graph:

* Who posts: a follower-count-dependent share of users (about a quarter of the
  Slashdot graph); how much: a heavy-tailed (log-normal) propensity times
  ``(1 + followers) ** 0.6``, capped at :data:`MAX_POSTS_PER_USER`. A minority posts
  a lot, most posters a few times, most users never.
* When: uniformly over the last :data:`WINDOW` (30 days) before ``now``, thinned by a
  diurnal curve in each author's own time zone (quiet at 4 a.m., busy in the evening).
* What: short captions from a few templates, about a third with ``#hashtags``, one
  in ten with an image (an ``https://media.roost.example/…`` URL).
* Who is active: posters, plus :data:`LURKER_SHARE` of the others, get a
  ``users.last_active_at`` within the window; the ``always_active`` users (``sd0``)
  are active now. Fan-out pushes only to active followers.

The bulk part is one transaction: ``COPY`` into ``posts`` (UUIDv7 ids carrying each
post's own timestamp) and ``post_hashtags``, the authors' ``posts`` counters added to
shard 0, and the activity times, so counts are exact. It writes no outbox rows: bulk
history is not a stream of user actions, and no feed has to be told about it, because
cached timelines of the users it touches are dropped afterwards and "a missing feed is
rebuilt from PostgreSQL on read" (docs/design.md "Home feed"). The newest ``live_tail``
posts are then published through :func:`~domain.posts.create_post.create_post`
(outbox, dispatcher, worker fan-out), including one by each of the ``tail_hubs``
most-followed users, so the worker decides push or pull for the real hubs and
visibly fans out.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import time
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.postgres.driver import asyncpg_connection
from domain.db import utcnow
from domain.feed.config import FeedStores
from domain.media.config import MediaConfig
from domain.outbox.dispatch import Dispatcher
from domain.posts.create_post import create_post
from domain.progress import Progress, counted, no_progress
from tools.seed_posts.feeds import REDIS_BATCH, _drop_timelines, _warm
from tools.seed_posts.generate import (
    CAPTION_POOL,
    DIURNAL,
    FOLLOWER_EXPONENT,
    LURKER_SHARE,
    MAX_POSTS_PER_USER,
    MEDIA_SHARE,
    PROPENSITY_SIGMA,
    TIME_ZONES,
    WINDOW,
    _ids_of,
    _plan,
)
from tools.seed_posts.report import SeedReport
from tools.seed_posts.write import (
    _ADD_POST_COUNTS,
    _MARK_ACTIVE,
    _population,
    _posts_exist,
    _tag_posts,
)

__all__ = [
    "CAPTION_POOL",
    "DIURNAL",
    "FOLLOWER_EXPONENT",
    "LURKER_SHARE",
    "MAX_POSTS_PER_USER",
    "MEDIA_SHARE",
    "PROPENSITY_SIGMA",
    "REDIS_BATCH",
    "TIME_ZONES",
    "WINDOW",
    "SeedReport",
    "seed_posts",
]


#: The seeded posts' image URLs are on this made-up host: allowed for them alone (docs/api/media.md
#: "Media": an external URL's host must be allowed).
SEED_MEDIA = MediaConfig(url_allowed_hosts=frozenset({"media.roost.example"}))


async def seed_posts(
    engine: AsyncEngine,
    *,
    count: int,
    rng_seed: int = 2494,
    now: dt.datetime | None = None,
    users: Sequence[uuid.UUID] | None = None,
    live_tail: int = 200,
    tail_hubs: int = 20,
    always_active: Sequence[str] = ("sd0",),
    counter_shards: int = 16,
    dispatcher: Dispatcher | None = None,
    stores: FeedStores | None = None,
    warm_feeds: int = 0,
    progress: Progress = no_progress,
) -> SeedReport:
    """Create ``count`` posts over the existing active users; return a SeedReport.

    - ``count``: posts in all (>= 0). The newest ``min(live_tail, count)`` are published
      one by one through create_post (dated now; outbox rows, dispatched with
      ``dispatcher`` if given, else by the worker's relay); the rest are bulk history,
      dated in ``[now - 30 days, now)`` (``now`` defaults to the current UTC time).
    - ``users``: the population (ids); None means every active user. Inactive (banned,
      deleted) users never get posts. No user gets more than MAX_POSTS_PER_USER bulk
      posts, so a population too small for ``count`` gets fewer (``bulk_posts`` says).
    - Idempotent-ish: if any post exists (by the population, when given), nothing is
      written and the report says ``skipped``. The check runs under ``LOCK TABLE posts
      IN SHARE ROW EXCLUSIVE MODE``, so two seeds cannot both write. A run that fails
      during the live tail keeps its bulk posts, and a re-run then skips.
    - Counters: each author's ``posts`` counter gets exactly its bulk posts on shard 0,
      in the bulk transaction (create_post counts the live ones).
    - ``always_active`` usernames (if present) get ``last_active_at = now``.
    - ``stores``: the feed store; when given, cached timelines of the authors and their
      followers are dropped after the bulk commit (rebuilt on read), then up to
      ``warm_feeds`` feeds (the always-active users first, then random active users)
      are rebuilt so the live tail's fan-out has feeds to write to.
    - ``rng_seed`` makes authors, times and captions reproducible (ids are not).
    - ``progress`` hears each phase (read users, generate, copy posts, hashtags, mark
      active, analyze, drop cached timelines, warm feeds, live posts).

    Raises ValueError (negative ``count``), SQLAlchemy DBAPIError (the bulk transaction
    rolls back) and StoreError (after the bulk commit).
    """
    if count < 0:
        raise ValueError("count must be >= 0")
    started = time.perf_counter()
    phases: dict[str, float] = {}
    lap = [started]

    def mark(phase: str, next_phase: str | None = None) -> None:
        t = time.perf_counter()
        phases[phase] = t - lap[0]
        lap[0] = t
        if next_phase:
            progress(next_phase, 0, None)

    now = now or utcnow()
    tail = min(live_tail, count)
    bulk = count - tail
    users = list(users) if users is not None else None

    def report(**kw: Any) -> SeedReport:
        return SeedReport(seconds=time.perf_counter() - started, phases=phases, **kw)

    async with engine.begin() as conn:
        for setting in (
            "SET LOCAL synchronous_commit = off",
            "SET LOCAL statement_timeout = 0",
            "SET LOCAL work_mem = '128MB'",
        ):
            await conn.execute(text(setting))
        progress("read users", 0, None)
        await conn.execute(text("LOCK TABLE posts IN SHARE ROW EXCLUSIVE MODE"))
        exists = count > 0 and await _posts_exist(conn, users)
        people = await _population(conn, users) if count and not exists else []
        if not people:
            return report(
                posts=0,
                bulk_posts=0,
                live_posts=0,
                authors=0,
                active_users=0,
                population=0,
                skipped=exists,
            )
        mark("read users", "generate")
        plan = await asyncio.to_thread(
            _plan,
            people,
            bulk=bulk,
            tail=tail,
            tail_hubs=tail_hubs,
            always_active=always_active,
            now=now,
            rng_seed=rng_seed,
        )
        mark("generate")
        apg = await asyncpg_connection(conn)
        tagged = 0
        if plan.records:
            await apg.copy_records_to_table(
                "posts",
                records=counted(plan.records, progress, "copy posts", len(plan.records)),
                columns=["id", "author_id", "caption", "media", "created_at"],
            )
            authors = sorted(plan.per_author, key=lambda u: u.bytes)
            await conn.execute(
                _ADD_POST_COUNTS,
                {"authors": authors, "counts": [plan.per_author[a] for a in authors]},
            )
            mark("copy posts", "hashtags")
            tagged = await _tag_posts(conn, apg, plan.records)
            mark("hashtags", "mark active")
        await conn.execute(
            text(
                "CREATE TEMP TABLE seed_posts_active (id uuid PRIMARY KEY, ts timestamptz"
                " NOT NULL) ON COMMIT DROP"
            )
        )
        await apg.copy_records_to_table(
            "seed_posts_active", records=list(plan.active.items()), columns=["id", "ts"]
        )
        await conn.execute(_MARK_ACTIVE)
        mark("mark active", "analyze")
    async with engine.begin() as conn:
        await conn.execute(text("ANALYZE posts, users, counter_shards"))
    mark("analyze")

    all_authors = set(plan.per_author) | {a for a, _, _ in plan.tail}
    dropped = warmed = 0
    if stores is not None:
        progress("drop cached timelines", 0, None)
        dropped = await _drop_timelines(engine, stores, sorted(all_authors, key=lambda u: u.bytes))
        mark("drop cached timelines")
        if warm_feeds > 0:
            first = _ids_of(people, always_active)
            rest = sorted(set(plan.active) - set(first), key=lambda u: u.bytes)
            rng = random.Random(rng_seed + 1)
            owners = first + rng.sample(rest, min(len(rest), max(0, warm_feeds - len(first))))
            warmed = await _warm(engine, stores, owners[:warm_feeds], progress)
            mark("warm feeds")

    for author, caption, media in counted(
        plan.tail, progress, "live posts", len(plan.tail), unit="posts", every=10
    ):
        await create_post(
            engine,
            author,
            caption=caption,
            media=media,
            media_config=SEED_MEDIA,
            counter_shards=counter_shards,
            dispatcher=dispatcher,
        )
    if plan.tail:
        mark("live posts")

    return report(
        posts=len(plan.records) + len(plan.tail),
        bulk_posts=len(plan.records),
        live_posts=len(plan.tail),
        authors=len(all_authors),
        active_users=len(plan.active),
        population=len(people),
        skipped=False,
        timelines_dropped=dropped,
        feeds_warmed=warmed,
        hashtag_links=tagged,
    )
