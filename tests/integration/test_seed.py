"""``seed_posts``: bulk history plus a live tail, against real PostgreSQL, Redis and an
arq worker.

The database is shared by the whole run, so every test seeds over users of its own
(``users=``) and asserts on them only. Test settings: pull at >= 40 followers.
"""

from __future__ import annotations

import datetime as dt
import uuid

from redis.asyncio import Redis
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.feedstore.stores import feed_stores
from domain.counters import Delta, add_deltas, read_counts
from domain.db import new_id, utcnow
from domain.engagement.hashtags import extract_hashtags
from domain.text import CAPTION_MAX
from tools.seed_posts import WINDOW, seed_posts


async def _post_counts(engine: AsyncEngine, ids: list[uuid.UUID]) -> tuple[dict, dict]:
    """(counter per user, count(*) of live posts per user)."""
    async with engine.connect() as conn:
        counters = await read_counts(conn, ids, ["posts"])
        rows = await conn.execute(
            text(
                "SELECT author_id, count(*) FROM posts"
                " WHERE author_id = ANY(CAST(:ids AS uuid[])) AND deleted_at IS NULL"
                " GROUP BY author_id"
            ),
            {"ids": ids},
        )
        actual = dict(rows.all())
    return {u: counters[(u, "posts")] for u in ids}, {u: actual.get(u, 0) for u in ids}


async def _follow(engine: AsyncEngine, pairs: list[tuple[uuid.UUID, uuid.UUID]]) -> None:
    """Insert live follows (follower, followee) with their counters."""
    async with engine.begin() as conn:
        await conn.execute(
            text("INSERT INTO follows (id, follower_id, followee_id) VALUES (:id, :a, :b)"),
            [{"id": new_id(), "a": a, "b": b} for a, b in pairs],
        )
        deltas = [Delta(b, "followers", 1) for _, b in pairs]
        deltas += [Delta(a, "following", 1) for a, _ in pairs]
        await add_deltas(conn, deltas, shards=4)


async def test_bulk_seed_counts_window_activity_and_idempotence(
    engine: AsyncEngine, make_users
) -> None:
    users = await make_users(300, "seed", active=False)
    ids = [u.id for u in users]
    # A few popular users, so the activity model has followers to work with.
    await _follow(engine, [(f, t) for t in ids[:5] for f in ids[5:60] if f != t])
    now = utcnow()

    report = await seed_posts(
        engine,
        count=500,
        users=ids,
        live_tail=0,
        now=now,
        always_active=(users[7].username,),
    )

    assert not report.skipped
    assert (report.posts, report.bulk_posts, report.live_posts) == (500, 500, 0)
    assert report.population == 300
    counters, actual = await _post_counts(engine, ids)
    assert counters == actual
    assert sum(actual.values()) == 500
    assert report.authors == sum(1 for n in actual.values() if n)
    assert 1 < report.authors < 300  # a minority posts, unevenly
    assert max(actual.values()) > 500 / report.authors

    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                text(
                    "SELECT id, caption, media, created_at FROM posts"
                    " WHERE author_id = ANY(CAST(:ids AS uuid[]))"
                ),
                {"ids": ids},
            )
        ).all()
        active = dict(
            (
                await conn.execute(
                    text(
                        "SELECT id, last_active_at FROM users"
                        " WHERE id = ANY(CAST(:ids AS uuid[])) AND last_active_at IS NOT NULL"
                    ),
                    {"ids": ids},
                )
            ).all()
        )
        # Shard 0 only: the bulk adds exact totals in one row per author.
        shards = await conn.scalar(
            text(
                "SELECT count(*) FROM counter_shards WHERE kind = 'posts' AND shard <> 0"
                " AND entity_id = ANY(CAST(:ids AS uuid[]))"
            ),
            {"ids": ids},
        )
        outbox = await conn.scalar(
            text(
                "SELECT count(*) FROM outbox WHERE topic = 'post.created'"
                " AND aggregate_id = ANY(CAST(:p AS uuid[]))"
            ),
            {"p": [r.id for r in rows]},
        )
    assert shards == 0
    assert outbox == 0  # bulk history writes no outbox rows
    for r in rows:
        assert now - WINDOW <= r.created_at < now
        assert 0 < len(r.caption) <= CAPTION_MAX
        assert r.id.version == 7
        # The UUIDv7's millisecond field is the post's own time (ids stay time-ordered).
        assert r.id.int >> 80 == int(r.created_at.timestamp() * 1000)
        assert r.media == [] or r.media[0]["kind"] == "image"
    assert len({r.id for r in rows}) == 500
    authors = {u for u, n in actual.items() if n}
    assert authors <= set(active)  # every poster is active
    assert len(active) == report.active_users
    assert len(active) > len(authors)  # ... and some lurkers too
    assert active[users[7].id] == now
    for ts in active.values():
        assert now - WINDOW <= ts <= now

    # Hashtags are recorded as create_post records them.
    async with engine.connect() as conn:
        links = await conn.scalar(
            text("SELECT count(*) FROM post_hashtags WHERE post_id = ANY(CAST(:p AS uuid[]))"),
            {"p": [r.id for r in rows]},
        )
    assert links == report.hashtag_links
    assert links == sum(len(extract_hashtags(r.caption)) for r in rows) > 0

    again = await seed_posts(engine, count=500, users=ids, live_tail=0, now=now)
    assert again.skipped and again.posts == 0
    assert await _post_counts(engine, ids) == (counters, actual)


async def test_seed_is_reproducible_given_the_seed(engine: AsyncEngine, make_users) -> None:
    a = await make_users(40, "seeda", active=False)
    b = await make_users(40, "seedb", active=False)
    now = utcnow()
    ra = await seed_posts(engine, count=120, users=[u.id for u in a], live_tail=0, now=now)
    rb = await seed_posts(engine, count=120, users=[u.id for u in b], live_tail=0, now=now)
    assert (ra.authors, ra.active_users) == (rb.authors, rb.active_users)

    async def times(users) -> list[dt.datetime]:
        async with engine.connect() as conn:
            return sorted(
                (
                    await conn.execute(
                        text(
                            "SELECT created_at FROM posts"
                            " WHERE author_id = ANY(CAST(:ids AS uuid[]))"
                        ),
                        {"ids": [u.id for u in users]},
                    )
                ).scalars()
            )

    # Same sizes of population, same followers (none), same seed: same timestamps.
    assert await times(a) == await times(b)


async def test_live_tail_fans_out_through_the_worker(
    engine: AsyncEngine, make_users, settings, worker
) -> None:
    users = await make_users(50, "seedl", active=False)
    ids = [u.id for u in users]
    star, second, reader = users[0], users[1], users[2]
    # 45 followers: a pull author at these settings (>= 40); `second` has 1 (push).
    await _follow(engine, [(u, star.id) for u in ids[1:46]] + [(reader.id, second.id)])
    redis = Redis.from_url(settings.redis_url)
    stores = feed_stores(redis, settings.feed_config)
    try:
        report = await seed_posts(
            engine,
            count=60,
            users=ids,
            live_tail=10,
            tail_hubs=2,
            always_active=(reader.username,),
            counter_shards=settings.counter_shards,
            stores=stores,
            warm_feeds=1,
        )
        assert (report.bulk_posts, report.live_posts, report.feeds_warmed) == (50, 10, 1)
        await worker.drain()

        counters, actual = await _post_counts(engine, ids)
        assert counters == actual and sum(actual.values()) == 60
        async with engine.connect() as conn:
            mode = await conn.scalar(
                text("SELECT mode FROM author_feed_modes WHERE author_id = :a"), {"a": star.id}
            )
            live = (
                await conn.execute(
                    text(
                        "SELECT p.id, p.author_id FROM posts p JOIN outbox o"
                        " ON o.aggregate_id = p.id AND o.topic = 'post.created'"
                        " WHERE p.author_id = ANY(CAST(:ids AS uuid[]))"
                        " AND o.dispatched_at IS NOT NULL"
                    ),
                    {"ids": ids},
                )
            ).all()
        assert len(live) == 10  # the live tail went through the outbox and the worker
        assert mode == "pull"  # the hub's mode was decided at fan-out time
        # The reader's feed was warmed before the tail, and the worker pushed the
        # second hub's live post into it.
        second_live = [p for p, a in live if a == second.id]
        assert second_live
        (page,) = await stores.feeds.page([reader.id], None, 100)
        assert page is not None
        assert set(second_live) <= {e.post_id for e in page}
    finally:
        await redis.aclose()
