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
rebuilt from PostgreSQL on read" (design.md "Home feed"). The newest ``live_tail``
posts are then published through :func:`~domain.posts.create_post.create_post`
(outbox, dispatcher, worker fan-out), including one by each of the ``tail_hubs``
most-followed users, so the worker decides push or pull for the real hubs and
visibly fans out.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import math
import random
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import new_id, utcnow
from domain.engagement.hashtags import extract_hashtags
from domain.feed.config import FeedStores
from domain.feed.sources import home_entries_sql
from domain.feed.timelines import RebuildBusyError
from domain.outbox.dispatch import Dispatcher
from domain.posts.create_post import MediaItem, create_post

log = logging.getLogger(__name__)

#: Seeded posts are dated within this long before ``now``.
WINDOW = dt.timedelta(days=30)
#: No user gets more than this many seeded posts (10 a day).
MAX_POSTS_PER_USER = 300
#: Share of the non-posting users who still read the app within the window.
LURKER_SHARE = 0.2
#: Sigma of the log-normal posting propensity (the heavy tail).
PROPENSITY_SIGMA = 1.2
#: Exponent of ``1 + followers`` in the posting propensity.
FOLLOWER_EXPONENT = 0.6
#: Share of posts with an image attached.
MEDIA_SHARE = 0.1
#: Distinct captions drawn per run (picked from at random).
CAPTION_POOL = 4096
#: Users whose timelines are dropped / warmed per Redis round trip.
REDIS_BATCH = 1000

#: Relative posting rate by local hour (0-23): quiet at night, busiest in the evening.
DIURNAL = (
    0.35, 0.25, 0.18, 0.14, 0.13, 0.17, 0.30, 0.50, 0.70, 0.80, 0.85, 0.90,
    0.95, 0.92, 0.90, 0.90, 0.95, 1.00, 1.00, 1.00, 0.95, 0.85, 0.70, 0.50,
)  # fmt: skip
#: Authors' UTC offsets in hours and their weights (Slashdot's readers: mostly American).
TIME_ZONES = ((-8.0, 0.22), (-6.0, 0.10), (-5.0, 0.28), (0.0, 0.12), (1.0, 0.14), (5.5, 0.06),
              (8.0, 0.05), (10.0, 0.03))  # fmt: skip

_TOPICS = (
    "Linux 6.x", "the new GPU drivers", "Rust in the kernel", "systemd", "IPv6 adoption",
    "the Mars rover", "open-source licensing", "quantum computing", "SSD prices",
    "the Emacs vs vi debate", "self-driving cars", "fusion power", "BSD", "a 20-year-old bug",
    "my home lab", "retro computing", "the patent system", "net neutrality", "space launches",
    "a new programming language", "mechanical keyboards", "backups", "password managers",
)  # fmt: skip
_OPINIONS = (
    "Finally.", "Not convinced yet.", "This changes everything.", "Seen this before.",
    "Worth reading.", "Great write-up.", "The comments are better than the article.",
    "I'll believe it when it ships.", "About time.", "Interesting times.",
)  # fmt: skip
_TEMPLATES = (
    "Just read about {topic}. {opinion}",
    "Anyone else following {topic}? {opinion}",
    "Spent the weekend on {topic}. {opinion}",
    "Hot take on {topic}: {opinion}",
    "{opinion} ({topic})",
    "Reading up on {topic} tonight.",
    "Three things I learned about {topic} today.",
    "Is {topic} overrated? {opinion}",
)
_HASHTAGS = (
    "linux", "opensource", "science", "space", "security", "hardware", "programming",
    "retro", "privacy", "ai", "gaming", "rustlang", "python", "homelab", "news",
)  # fmt: skip

_MASK62 = (1 << 62) - 1
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_US = dt.timedelta(microseconds=1)
_NO_MEDIA = "[]"
_DIURNAL_MAX = max(DIURNAL)


@dataclass(frozen=True)
class SeedReport:
    """What one :func:`seed_posts` run did. Times are wall-clock seconds."""

    posts: int  # posts created by this run (bulk + live)
    bulk_posts: int  # COPYed history (no outbox rows)
    live_posts: int  # published through create_post (outbox -> worker fan-out)
    authors: int  # distinct authors of this run's posts
    active_users: int  # users given a last_active_at within the window by this run
    population: int  # active users the posts were spread over
    skipped: bool  # posts already existed: nothing was written
    seconds: float
    timelines_dropped: int = 0  # cached feeds / author stores deleted (rebuilt on read)
    feeds_warmed: int = 0  # feeds rebuilt before the live posts, so fan-out has targets
    hashtag_links: int = 0  # post_hashtags rows of the bulk posts
    phases: dict[str, float] = field(default_factory=dict)  # seconds per phase

    def summary(self) -> str:
        """A human, one- or two-line account of the run."""
        if self.skipped:
            return "Posts already exist: seeding skipped (nothing written)."
        if not self.posts:
            return "Nothing to seed (no posts asked for, or no active users)."
        phases = ", ".join(f"{k} {v:.1f} s" for k, v in self.phases.items())
        return (
            f"Seeded {self.posts:,} posts ({self.bulk_posts:,} bulk, {self.live_posts:,} live)"
            f" by {self.authors:,} authors over {self.population:,} users;"
            f" {self.active_users:,} users active in the last {WINDOW.days} days;"
            f" {self.hashtag_links:,} hashtag links; {self.timelines_dropped:,} cached"
            " timelines dropped,"
            f" {self.feeds_warmed:,} feeds warmed; {self.seconds:.1f} s\n  ({phases})"
        )


@dataclass(frozen=True)
class _Person:
    id: uuid.UUID
    username: str
    followers: int


@dataclass
class _Plan:
    """Everything the bulk transaction writes, generated in memory first."""

    records: list[tuple] = field(default_factory=list)  # (id, author, caption, media, ts)
    per_author: Counter = field(default_factory=Counter)  # bulk posts per author
    active: dict[uuid.UUID, dt.datetime] = field(default_factory=dict)  # last_active_at
    tail: list[tuple[uuid.UUID, str, list[MediaItem]]] = field(default_factory=list)


# ----------------------------------------------------------------------- generation


def _uuid7_at(ms: int, rand74: int) -> uuid.UUID:
    """A UUIDv7 (RFC 9562) with millisecond timestamp ``ms`` and 74 random bits."""
    return uuid.UUID(
        int=(ms << 80) | (0x7 << 76) | ((rand74 >> 62) << 64) | (0b10 << 62) | (rand74 & _MASK62)
    )


def _caption(rng: random.Random) -> str:
    caption = rng.choice(_TEMPLATES).format(
        topic=rng.choice(_TOPICS), opinion=rng.choice(_OPINIONS)
    )
    if rng.random() < 0.35:
        caption += " " + " ".join("#" + t for t in rng.sample(_HASHTAGS, rng.randint(1, 3)))
    return caption


def _media_url(bits: random.Random) -> str:
    return f"https://media.roost.example/p/{bits.getrandbits(64):016x}.jpg"


def _poster_probability(followers: int) -> float:
    return min(0.9, 0.12 + 0.08 * math.log1p(followers))


def _allocate(rng: random.Random, weights: dict[uuid.UUID, float], total: int) -> Counter:
    """Split ``total`` posts over the posters: one each (as far as it goes), the rest in
    proportion to ``weights``, none above MAX_POSTS_PER_USER (overflow is re-drawn)."""
    posters = sorted(weights, key=lambda u: -weights[u])
    counts: Counter = Counter()
    for u in posters[:total]:
        counts[u] = 1
    left = total - sum(counts.values())
    open_ = [u for u in posters if counts[u] < MAX_POSTS_PER_USER]
    while left > 0 and open_:
        cum, acc = [], 0.0
        for u in open_:
            acc += weights[u]
            cum.append(acc)
        for u in rng.choices(open_, cum_weights=cum, k=left):
            counts[u] += 1
        left = 0
        for u in open_:
            if counts[u] > MAX_POSTS_PER_USER:
                left += counts[u] - MAX_POSTS_PER_USER
                counts[u] = MAX_POSTS_PER_USER
        open_ = [u for u in open_ if counts[u] < MAX_POSTS_PER_USER]
    return counts


def _plan(
    people: list[_Person],
    *,
    bulk: int,
    tail: int,
    tail_hubs: int,
    always_active: Sequence[str],
    now: dt.datetime,
    rng_seed: int,
) -> _Plan:
    """Generate the bulk posts, the live tail's authors and captions, and activity."""
    rng = random.Random(rng_seed)
    bits = random.Random()  # id and URL randomness: unique per run, not reproducible
    zones, zone_weights = zip(*TIME_ZONES, strict=True)
    plan = _Plan()

    weights: dict[uuid.UUID, float] = {}
    everyone: dict[uuid.UUID, float] = {}
    tz: dict[uuid.UUID, float] = {}
    for p in people:
        w = rng.lognormvariate(0.0, PROPENSITY_SIGMA) * (1 + p.followers) ** FOLLOWER_EXPONENT
        everyone[p.id] = w
        tz[p.id] = rng.choices(zones, zone_weights)[0]
        if rng.random() < _poster_probability(p.followers):
            weights[p.id] = w
    if len(weights) * MAX_POSTS_PER_USER < bulk:  # too few posters for the cap: everyone
        weights = everyone

    last_post: dict[uuid.UUID, dt.datetime] = {}
    if bulk:
        captions = [_caption(rng) for _ in range(CAPTION_POOL)]
        n_captions = len(captions)
        accept = [d / _DIURNAL_MAX for d in DIURNAL]
        now_us = (now - _EPOCH) // _US
        window_us = WINDOW // _US
        rand, getbits, append = rng.random, bits.getrandbits, plan.records.append
        for author, n in sorted(_allocate(rng, weights, bulk).items(), key=lambda kv: kv[0].bytes):
            plan.per_author[author] = n
            shift_us = int(tz[author] * 3_600_000_000)
            newest = 0
            for _ in range(n):
                while True:  # uniform over [now - WINDOW, now), thinned by local hour
                    t = now_us - 1 - int(rand() * window_us)
                    if rand() < accept[((t + shift_us) // 3_600_000_000) % 24]:
                        break
                media = _NO_MEDIA
                if rand() < MEDIA_SHARE:
                    media = json.dumps([{"url": _media_url(bits), "kind": "image"}])
                append(
                    (
                        _uuid7_at(t // 1000, getbits(74)),
                        author,
                        captions[int(rand() * n_captions)],
                        media,
                        _EPOCH + dt.timedelta(microseconds=t),
                    )
                )
                newest = max(newest, t)
            last_post[author] = _EPOCH + dt.timedelta(microseconds=newest)

    # The live tail: the most-followed users first (their push/pull is decided by the
    # worker), then authors drawn like the bulk.
    hubs = sorted(people, key=lambda p: (-p.followers, p.id.bytes))[: min(tail_hubs, tail)]
    tail_authors = [p.id for p in hubs]
    if tail > len(tail_authors) and weights:
        pool = sorted(weights, key=lambda u: u.bytes)
        tail_authors += rng.choices(pool, [weights[u] for u in pool], k=tail - len(tail_authors))
    for author in tail_authors:
        media = [MediaItem(_media_url(bits), "image")] if rng.random() < MEDIA_SHARE else []
        plan.tail.append((author, _caption(rng), media))

    # Activity: posters were around after their last post; some others lurk.
    window_s = WINDOW.total_seconds()
    for author, ts in last_post.items():
        plan.active[author] = ts + (now - ts) * rng.random()
    for p in people:
        if p.id not in plan.active and rng.random() < LURKER_SHARE:
            plan.active[p.id] = now - dt.timedelta(seconds=rng.random() * window_s)
    by_name = {p.username: p.id for p in people}
    for uid in [*tail_authors, *(by_name[n] for n in always_active if n in by_name)]:
        plan.active[uid] = now
    return plan


# ---------------------------------------------------------------------------- writes


async def _population(conn, users: Sequence[uuid.UUID] | None) -> list[_Person]:
    where = "AND u.id = ANY(CAST(:ids AS uuid[]))" if users is not None else ""
    rows = await conn.execute(
        text(
            f"""
            SELECT u.id, u.username, coalesce(sum(c.value), 0)::bigint AS followers
            FROM users u
            LEFT JOIN counter_shards c ON c.entity_id = u.id AND c.kind = 'followers'
            WHERE u.status = 'active' {where}
            GROUP BY u.id ORDER BY u.id
            """
        ),
        {"ids": list(users)} if users is not None else {},
    )
    return [_Person(r.id, r.username, int(r.followers)) for r in rows]


async def _posts_exist(conn, users: Sequence[uuid.UUID] | None) -> bool:
    if users is None:
        return bool(await conn.scalar(text("SELECT EXISTS (SELECT 1 FROM posts)")))
    return bool(
        await conn.scalar(
            text("SELECT EXISTS (SELECT 1 FROM posts WHERE author_id = ANY(CAST(:ids AS uuid[])))"),
            {"ids": list(users)},
        )
    )


_ADD_POST_COUNTS = text(
    """
    INSERT INTO counter_shards (entity_id, kind, shard, value)
    SELECT a, 'posts', 0, n
    FROM unnest(CAST(:authors AS uuid[]), CAST(:counts AS bigint[])) AS t(a, n)
    ORDER BY a
    ON CONFLICT (entity_id, kind, shard)
    DO UPDATE SET value = counter_shards.value + EXCLUDED.value
    """
)

_MARK_ACTIVE = text(
    """
    UPDATE users u SET last_active_at = greatest(u.last_active_at, s.ts)
    FROM seed_posts_active s WHERE u.id = s.id
    """
)


async def _tag_posts(conn, apg, records: list[tuple]) -> int:
    """Record the hashtags of the bulk posts as create_post does (``hashtags`` rows for
    new names, one ``post_hashtags`` row per post and tag); return the links written."""
    by_caption = {c: extract_hashtags(c) for c in {r[2] for r in records}}
    names = sorted({t for tags in by_caption.values() for t in tags})
    if not names:
        return 0
    await conn.execute(
        text(
            "INSERT INTO hashtags (id, name)"
            " SELECT * FROM unnest(CAST(:ids AS uuid[]), CAST(:names AS text[]))"
            " ON CONFLICT (name) DO NOTHING"
        ),
        {"ids": [new_id() for _ in names], "names": names},
    )
    rows = await conn.execute(
        text("SELECT name, id FROM hashtags WHERE name = ANY(CAST(:names AS text[]))"),
        {"names": names},
    )
    ids = dict(rows.all())
    links = [
        (ids[tag], post_id, created_at)
        for post_id, _, caption, _, created_at in records
        for tag in by_caption[caption]
    ]
    await apg.copy_records_to_table(
        "post_hashtags", records=links, columns=["hashtag_id", "post_id", "created_at"]
    )
    return len(links)


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
                    " WHERE followee_id = ANY(CAST(:a AS uuid[])) AND deleted_at IS NULL"
                ),
                {"a": list(authors)},
            )
        ).scalars()
        feed_owners = sorted(set(followers) | set(authors), key=lambda u: u.bytes)
    keys = [k for o in feed_owners for k in (stores.feeds.key(o), stores.feeds.key(o) + ":build")]
    keys += [
        k
        for a in authors
        for k in (stores.author_posts.key(a), stores.author_posts.key(a) + ":build")
    ]
    redis = stores.feeds.redis
    deleted = 0
    for i in range(0, len(keys), REDIS_BATCH):
        deleted += int(await redis.unlink(*keys[i : i + REDIS_BATCH]))
    return deleted


async def _warm(engine: AsyncEngine, stores: FeedStores, owners: Sequence[uuid.UUID]) -> int:
    """Rebuild the feeds of ``owners`` from PostgreSQL (as a first read would)."""
    warmed = 0
    for owner in owners:

        async def load(owner: uuid.UUID = owner):
            async with engine.connect() as conn:
                return await home_entries_sql(conn, owner, before=None, limit=stores.feeds.max_len)

        try:
            if await stores.feeds.rebuild(owner, load):
                warmed += 1
        except RebuildBusyError:  # a reader is rebuilding it right now: same result
            pass
    return warmed


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

    Raises ValueError (negative ``count``), SQLAlchemy DBAPIError (the bulk transaction
    rolls back) and RedisError (after the bulk commit).
    """
    if count < 0:
        raise ValueError("count must be >= 0")
    started = time.perf_counter()
    phases: dict[str, float] = {}
    lap = [started]

    def mark(phase: str) -> None:
        t = time.perf_counter()
        phases[phase] = t - lap[0]
        lap[0] = t

    now = now or utcnow()
    tail = min(live_tail, count)
    bulk = count - tail
    users = list(users) if users is not None else None

    def report(**kw) -> SeedReport:
        return SeedReport(seconds=time.perf_counter() - started, phases=phases, **kw)

    async with engine.begin() as conn:
        for setting in (
            "SET LOCAL synchronous_commit = off",
            "SET LOCAL statement_timeout = 0",
            "SET LOCAL work_mem = '128MB'",
        ):
            await conn.execute(text(setting))
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
        mark("read users")
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
        raw = await conn.get_raw_connection()
        apg = raw.driver_connection
        tagged = 0
        if plan.records:
            await apg.copy_records_to_table(
                "posts",
                records=plan.records,
                columns=["id", "author_id", "caption", "media", "created_at"],
            )
            authors = sorted(plan.per_author, key=lambda u: u.bytes)
            await conn.execute(
                _ADD_POST_COUNTS,
                {"authors": authors, "counts": [plan.per_author[a] for a in authors]},
            )
            mark("copy posts")
            tagged = await _tag_posts(conn, apg, plan.records)
            mark("hashtags")
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
        mark("mark active")
    async with engine.begin() as conn:
        await conn.execute(text("ANALYZE posts, users, counter_shards"))
    mark("analyze")

    dropped = warmed = 0
    if stores is not None:
        all_authors = sorted(
            set(plan.per_author) | {a for a, _, _ in plan.tail}, key=lambda u: u.bytes
        )
        dropped = await _drop_timelines(engine, stores, all_authors)
        mark("drop cached timelines")
        if warm_feeds > 0:
            by_name = {p.username: p.id for p in people}
            first = [by_name[n] for n in always_active if n in by_name]
            rest = sorted(set(plan.active) - set(first), key=lambda u: u.bytes)
            rng = random.Random(rng_seed + 1)
            owners = first + rng.sample(rest, min(len(rest), max(0, warm_feeds - len(first))))
            warmed = await _warm(engine, stores, owners[:warm_feeds])
            mark("warm feeds")

    for author, caption, media in plan.tail:
        await create_post(
            engine,
            author,
            caption=caption,
            media=media,
            counter_shards=counter_shards,
            dispatcher=dispatcher,
        )
    if plan.tail:
        mark("live posts")

    authors_all = set(plan.per_author) | {a for a, _, _ in plan.tail}
    return report(
        posts=len(plan.records) + len(plan.tail),
        bulk_posts=len(plan.records),
        live_posts=len(plan.tail),
        authors=len(authors_all),
        active_users=len(plan.active),
        population=len(people),
        skipped=False,
        timelines_dropped=dropped,
        feeds_warmed=warmed,
        hashtag_links=tagged,
    )
