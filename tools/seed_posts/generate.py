"""Generate a seed in memory: who posts how much and when, captions, media, activity."""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from domain.posts.create_post import MediaItem

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
class _Person:
    id: uuid.UUID
    username: str
    followers: int


#: A bulk post as COPY writes it: (id, author_id, caption, media JSON, created_at).
PostRecord = tuple[uuid.UUID, uuid.UUID, str, str, dt.datetime]


@dataclass
class _Plan:
    """Everything the bulk transaction writes, generated in memory first."""

    records: list[PostRecord] = field(default_factory=list)
    per_author: Counter[uuid.UUID] = field(default_factory=Counter)  # bulk posts per author
    active: dict[uuid.UUID, dt.datetime] = field(default_factory=dict)  # last_active_at
    tail: list[tuple[uuid.UUID, str, list[MediaItem]]] = field(default_factory=list)


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


def _allocate(
    rng: random.Random, weights: dict[uuid.UUID, float], total: int
) -> Counter[uuid.UUID]:
    """Split ``total`` posts over the posters: one each (as far as it goes), the rest in
    proportion to ``weights``, none above MAX_POSTS_PER_USER (overflow is re-drawn)."""
    posters = sorted(weights, key=lambda u: -weights[u])
    counts: Counter[uuid.UUID] = Counter()
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
        items = [MediaItem(_media_url(bits), "image")] if rng.random() < MEDIA_SHARE else []
        plan.tail.append((author, _caption(rng), items))

    # Activity: posters were around after their last post; some others lurk.
    window_s = WINDOW.total_seconds()
    for author, ts in last_post.items():
        plan.active[author] = ts + (now - ts) * rng.random()
    for p in people:
        if p.id not in plan.active and rng.random() < LURKER_SHARE:
            plan.active[p.id] = now - dt.timedelta(seconds=rng.random() * window_s)
    for uid in [*tail_authors, *_ids_of(people, always_active)]:
        plan.active[uid] = now
    return plan


def _ids_of(people: list[_Person], usernames: Sequence[str]) -> list[uuid.UUID]:
    """The ids of those of ``usernames`` who are among ``people``, in that order."""
    by_name = {p.username: p.id for p in people}
    return [by_name[n] for n in usernames if n in by_name]
