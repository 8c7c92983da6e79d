"""The home feed never loses a post, whatever order its jobs run in,
against real PostgreSQL, Redis and arq workers.

* The merge (after a follow) and the purge (after an unfollow or a block) of one pair
  commute: the test holds one job's outbox event back and releases it after the other
  ran, so the "late" job runs last, deterministically.
* A deleted post leaves followers' cached feeds (a fan-out of the removal), and a page
  is never empty while more posts follow, even while the removal is still queued.
* A pull author's posts past their store's window come from PostgreSQL.

Session settings (tests/conftest.py): pull at >= 40 followers, push again under 30.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import tempfile
import uuid
from pathlib import Path

import httpx
from redis.asyncio import Redis
from sqlalchemy import text

from adapters.feedstore.stores import feed_stores
from adapters.feedstore.timelines import RedisTimelines
from app.asgi import create_app
from app.embedded import EmbeddedRedis
from domain.db import new_id
from domain.feed.graph_events import merge_author_into_feed, remove_author_from_feed
from domain.feed.timelines import Entry
from domain.social.block_user import block_user
from domain.social.follow_user import follow_user
from domain.social.unblock_user import unblock_user
from domain.social.unfollow_user import unfollow_user
from schema.ids import to_global_id
from tests.support.actions import feed_captions, follow_all, post, walk_feed
from tests.support.checks import in_cached_feed, stores_for
from tests.support.documents import BLOCK, FEED, FOLLOW, UNBLOCK, UNFOLLOW
from tests.support.feeds import small_feeds
from tests.support.graphql import GQL
from tests.support.polling import PATIENCE_S
from tests.support.worker import WorkerControl

DELETE = """mutation($id: ID!) { deletePost(input: { postId: $id }) { __typename } }"""


# -- holding one job back --------------------------------------------------------------


async def hold(engine, topic: str, **payload: uuid.UUID) -> list[uuid.UUID]:
    """Keep the undispatched ``topic`` events whose payload matches out of the relay's
    reach (due in an hour); return their ids. Call it while the worker is stopped."""
    where = "".join(f" AND payload->>'{k}' = :{k}" for k in payload)
    async with engine.begin() as conn:
        rows = await conn.execute(
            text(
                "UPDATE outbox SET available_at = now() + interval '1 hour'"
                " WHERE dispatched_at IS NULL AND topic = :topic" + where + " RETURNING id"
            ),
            {"topic": topic, **{k: str(v) for k, v in payload.items()}},
        )
        return [r[0] for r in rows]


async def release(engine, ids: list[uuid.UUID]) -> None:
    """Make held events due now: the worker's relay enqueues them within a second."""
    async with engine.begin() as conn:
        await conn.execute(
            text("UPDATE outbox SET available_at = now() WHERE id = ANY(CAST(:ids AS uuid[]))"),
            {"ids": ids},
        )


async def drain_except(engine, held: list[uuid.UUID], within: float = PATIENCE_S) -> None:
    """Wait until every undispatched outbox event is one of ``held``."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        async with engine.connect() as conn:
            pending = await conn.scalar(
                text(
                    "SELECT count(*) FROM outbox WHERE dispatched_at IS NULL"
                    " AND NOT (id = ANY(CAST(:ids AS uuid[])))"
                ),
                {"ids": held},
            )
        if pending == 0:
            return
        assert asyncio.get_running_loop().time() < deadline, f"{pending} events pending"
        await asyncio.sleep(0.05)


async def cached(settings, user, gids: list[str]) -> list[bool | None]:
    redis, stores = stores_for(settings)
    try:
        return [await in_cached_feed(stores, user, g) for g in gids]
    finally:
        await redis.aclose()


async def _ready(gql, worker, *users) -> None:
    await worker.drain()
    for u in users:  # each has a complete (possibly empty) cached feed from now on
        await feed_captions(gql, u)


# -- 1. purge and merge of one pair commute ----------------------------------------------


async def test_a_late_unfollow_purge_does_not_erase_a_refollow(
    gql, make_users, worker, engine, settings
):
    a, b = await make_users(2)
    await _ready(gql, worker, a)
    await post(gql, a, "a-old")
    await follow_all(gql, [a], b)
    await worker.drain()
    gids = [await post(gql, b, f"P{i}") for i in range(1, 6)]
    await worker.drain()
    assert await feed_captions(gql, a) == ["P5", "P4", "P3", "P2", "P1", "a-old"]
    await worker.stop()
    try:
        await gql(UNFOLLOW, {"id": b.gid}, token=a.token)
        held = await hold(engine, "follow.removed", follower_id=a.id, followee_id=b.id)
        assert len(held) == 1
        await gql(FOLLOW, {"id": b.gid}, token=a.token)
    finally:
        await worker.start()
    await drain_except(engine, held)  # the re-follow's merge ran ...
    await release(engine, held)  # ... and only then the unfollow's purge
    await worker.drain()
    assert await cached(settings, a, gids) == [True] * 5
    assert await feed_captions(gql, a) == ["P5", "P4", "P3", "P2", "P1", "a-old"]


async def test_a_late_merge_does_not_undo_a_later_unfollow(
    gql, make_users, worker, engine, settings
):
    a, b = await make_users(2)
    await _ready(gql, worker, a)
    await post(gql, a, "a-old")
    gids = [await post(gql, b, f"P{i}") for i in range(1, 4)]
    await worker.stop()
    try:
        await gql(FOLLOW, {"id": b.gid}, token=a.token)
        held = await hold(engine, "follow.created", follower_id=a.id, followee_id=b.id)
        assert len(held) == 1
        await gql(UNFOLLOW, {"id": b.gid}, token=a.token)
    finally:
        await worker.start()
    await drain_except(engine, held)  # the purge ran first, the merge comes last
    await release(engine, held)
    await worker.drain()
    assert await cached(settings, a, gids) == [False] * 3
    assert await feed_captions(gql, a) == ["a-old"]


async def test_a_late_block_purge_does_not_erase_the_follow_after_unblock(
    gql, make_users, worker, engine, settings
):
    a, b = await make_users(2)
    await _ready(gql, worker, a, b)
    await follow_all(gql, [a], b)
    await follow_all(gql, [b], a)
    await worker.drain()
    gids = [await post(gql, b, f"P{i}") for i in range(1, 4)]
    a_gid = await post(gql, a, "from a")
    await worker.drain()
    await worker.stop()
    try:
        # b blocks a: both follows end; the block's purges (both ways) are held back.
        assert (await gql(BLOCK, {"id": a.gid}, token=b.token))["data"]["block"][
            "__typename"
        ] == "BlockSuccess"
        held = await hold(engine, "follow.removed") + await hold(engine, "block.created")
        assert len(held) == 3
        await gql(UNBLOCK, {"id": a.gid}, token=b.token)
        await gql(FOLLOW, {"id": b.gid}, token=a.token)
        await gql(FOLLOW, {"id": a.gid}, token=b.token)
    finally:
        await worker.start()
    await drain_except(engine, held)
    await release(engine, held)
    await worker.drain()
    assert await cached(settings, a, gids) == [True] * 3
    assert await cached(settings, b, [a_gid]) == [True]
    assert await feed_captions(gql, a) == ["from a", "P3", "P2", "P1"]


async def test_concurrent_jobs_of_one_pair_leave_the_feed_as_the_final_follow_state(
    make_users, worker, engine, settings
):
    """Follow, unfollow and block changes of one pair, then their merge and purge jobs
    all at once in shuffled order: once they ran, the cached feed holds the author's
    posts exactly when the follow is live. (The worker, stopped meanwhile, then runs
    the same events once more: a no-op.)"""
    a, b = await make_users(2)
    gids = [await _insert_post(engine, b.id, f"b{i}", dt.datetime.now(dt.UTC)) for i in range(3)]
    redis = Redis.from_url(settings.redis_url)
    stores = feed_stores(redis, settings.feed_config)
    config = settings.feed_config
    rng = random.Random(7)
    await worker.drain()  # no other test's event left on the stopped queue
    await worker.stop()
    try:
        await stores.feeds.create_empty([a.id])
        for round_ in range(12):
            jobs = []
            for _ in range(rng.randint(2, 5)):
                if rng.random() < 0.5:
                    await follow_user(engine, a.id, b.id, counter_shards=4)
                    jobs.append(merge_author_into_feed)
                elif rng.random() < 0.7:
                    await unfollow_user(engine, a.id, b.id, counter_shards=4)
                    jobs.append(remove_author_from_feed)
                else:
                    await block_user(engine, b.id, a.id, counter_shards=4)
                    await unblock_user(engine, b.id, a.id)
                    jobs.append(remove_author_from_feed)
            rng.shuffle(jobs)
            await asyncio.gather(*(job(engine, stores, config, a.id, b.id) for job in jobs))
            async with engine.connect() as conn:
                live = await conn.scalar(
                    text(
                        "SELECT count(*) FROM follows WHERE follower_id = :a"
                        " AND followee_id = :b AND deleted_at IS NULL"
                    ),
                    {"a": a.id, "b": b.id},
                )
            assert await cached(settings, a, gids) == [bool(live)] * 3, round_
    finally:
        await redis.aclose()
        await worker.start()
    await worker.drain()
    assert await cached(settings, a, gids) == [bool(live)] * 3


async def _insert_post(engine, author_id, caption: str, created_at: dt.datetime) -> str:
    pk = new_id()
    async with engine.begin() as conn:
        await conn.execute(
            text("INSERT INTO posts (id, author_id, caption, created_at) VALUES (:i, :a, :c, :t)"),
            {"i": pk, "a": author_id, "c": caption, "t": created_at},
        )
    return to_global_id("Post", pk)


async def test_following_a_pull_author_that_flips_back_to_push_keeps_its_older_posts(
    gql, make_users, worker, engine
):
    """A follow while the author is pull merges their posts all the same: once they are
    push again the reader stops merging their store, and the cached feed must hold them."""
    x, r = await make_users(2)
    fans = await make_users(41)
    now = dt.datetime.now(dt.UTC)
    for i in range(6):  # r's own older posts: r's cached feed reaches back past "early"
        await _insert_post(engine, r.id, f"r-old{i}", now - dt.timedelta(hours=2, minutes=i))
    await _insert_post(engine, x.id, "early", now - dt.timedelta(hours=1))  # before pull
    await _ready(gql, worker, r)
    await asyncio.gather(*(follow_user(engine, f.id, x.id, counter_shards=4) for f in fans))
    await post(gql, x, "pulled")  # 41 >= 40: flips x to pull
    await worker.drain()
    await follow_all(gql, [r], x)
    await worker.drain()
    expected = ["pulled", "early"] + [f"r-old{i}" for i in range(6)]
    assert await walk_feed(gql, r, 3) == expected
    # 42 - 13 = 29 < 30: the next post flips x back to push.
    await asyncio.gather(*(unfollow_user(engine, f.id, x.id, counter_shards=4) for f in fans[:13]))
    await post(gql, x, "back")
    await worker.drain()
    for first in (1, 3, 20):
        assert await walk_feed(gql, r, first) == ["back", *expected], first


# -- 2. deleted posts --------------------------------------------------------------------


async def test_deleted_posts_leave_followers_feeds_and_the_first_page_is_the_newest_live(
    gql, make_users, worker, settings
):
    a, b = await make_users(2)
    await _ready(gql, worker, a, b)
    await follow_all(gql, [a], b)
    await worker.drain()
    gids = [await post(gql, b, f"n{i:02}") for i in range(20)]
    await worker.drain()
    for gid in gids[4:]:  # the 16 newest
        out = await gql(DELETE, {"id": gid}, token=b.token)
        assert out["data"]["deletePost"]["__typename"] == "DeletePostSuccess"
    await worker.drain()
    assert await cached(settings, a, gids) == [True] * 4 + [False] * 16
    assert await cached(settings, b, gids[4:]) == [False] * 16  # the author's own too
    page = (await gql(FEED, {"first": 1}, token=a.token))["data"]["viewer"]["feed"]
    assert [e["node"]["caption"] for e in page["edges"]] == ["n03"]
    assert page["pageInfo"]["hasNextPage"] is True
    assert page["pageInfo"]["endCursor"] == page["edges"][0]["cursor"]
    assert await walk_feed(gql, a, 1) == ["n03", "n02", "n01", "n00"]


async def test_a_page_is_never_empty_while_deletions_still_sit_in_the_cache(
    gql, make_users, worker, engine, settings
):
    """The removal's fan-out is still queued (worker stopped), or never ran (rows marked
    deleted directly): the read scans past every filtered entry, with no round limit."""
    a, b, a2, c = await make_users(4)
    await _ready(gql, worker, a, a2)
    await follow_all(gql, [a], b)
    await follow_all(gql, [a2], c)
    await worker.drain()
    gids = [await post(gql, b, f"n{i:02}") for i in range(20)]
    await worker.drain()
    await worker.stop()
    try:
        for gid in gids[4:]:
            await gql(DELETE, {"id": gid}, token=b.token)
        assert await cached(settings, a, gids[4:]) == [True] * 16
        page = (await gql(FEED, {"first": 1}, token=a.token))["data"]["viewer"]["feed"]
        assert [e["node"]["caption"] for e in page["edges"]] == ["n03"]
        assert page["pageInfo"]["hasNextPage"] is True
        assert await walk_feed(gql, a, 1) == ["n03", "n02", "n01", "n00"]
    finally:
        await worker.start()
    await worker.drain()

    # 100 posts by c in a2's cached feed, the 88 newest then deleted behind its back.
    base = dt.datetime.now(dt.UTC) - dt.timedelta(days=1)
    ids = [new_id() for _ in range(100)]
    async with engine.begin() as conn:
        await conn.execute(
            text("INSERT INTO posts (id, author_id, caption, created_at) VALUES (:i, :a, :c, :t)"),
            [
                {"i": pk, "a": c.id, "c": f"c{i:03}", "t": base + dt.timedelta(seconds=i)}
                for i, pk in enumerate(ids)
            ],
        )
    redis, stores = stores_for(settings)
    try:
        await stores.feeds.drop(a2.id)  # rebuilt on the next read, with c's 100 posts
        assert len(await walk_feed(gql, a2, 100)) == 100
        assert await redis.zcard(stores.feeds.key(a2.id)) == 101  # and the sentinel
    finally:
        await redis.aclose()
    async with engine.begin() as conn:
        await conn.execute(
            text("UPDATE posts SET deleted_at = now() WHERE id = ANY(CAST(:ids AS uuid[]))"),
            {"ids": ids[12:]},
        )
    page = (await gql(FEED, {"first": 10}, token=a2.token))["data"]["viewer"]["feed"]
    assert [e["node"]["caption"] for e in page["edges"]] == [f"c{i:03}" for i in range(11, 1, -1)]
    assert page["pageInfo"]["hasNextPage"] is True
    live = [f"c{i:03}" for i in range(11, -1, -1)]
    for first in (1, 7, 10, 12):
        assert await walk_feed(gql, a2, first) == live, first


# -- 3. pull authors past their store's window -------------------------------------------


async def test_pull_author_posts_past_their_store_window_are_read_from_postgres(
    make_users, worker: WorkerControl, settings, engine
):
    """FEED_MAX_LEN=20, pull at >= 3 followers: P (3 followers, pull) posts 30, Q (push)
    posts 10, interleaved; R walks the feed at page sizes 7, 20 and 100 and gets all 40
    once each; then the same walk with Redis flushed midway (a Redis of the test's own),
    after deletes inside and past P's store window, and with P flipping back to push
    midway. One setup for these attacks (about 5 s: an embedded Redis and 40 posts)."""
    await worker.drain()  # every other test's event consumed with the run's settings
    await worker.stop()  # this test's events go to its own worker, with its settings
    with tempfile.TemporaryDirectory() as tmp:
        own = EmbeddedRedis(Path(tmp), persist=False)
        url = own.start()
        small = settings.model_copy(
            update={
                "redis_url": url,
                "arq_queue": f"roost-test-small:{uuid.uuid4().hex[:8]}",
                "feed_max_len": 20,
                "pull_threshold": 3,
                "push_back_threshold": 2,
            }
        )
        control = WorkerControl(small, engine)
        await control.start()
        try:
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=create_app(small, engine=engine)),
                base_url="http://roost.test",
            ) as client:
                gql = GQL(client)
                p, q, r, f1, f2 = await make_users(5)
                await follow_all(gql, [r, f1, f2], p)
                await follow_all(gql, [r], q)  # (their merges have nothing to merge)
                assert await feed_captions(gql, r) == []  # r's cached feed exists
                expected = []
                gids: dict[str, str] = {}
                for i in range(1, 31):
                    gids[f"P{i:02}"] = await post(gql, p, f"P{i:02}")
                    expected.append(f"P{i:02}")
                    if i % 3 == 0:
                        await post(gql, q, f"Q{i // 3:02}")
                        expected.append(f"Q{i // 3:02}")
                await control.drain()
                expected.reverse()
                async with engine.connect() as conn:
                    mode = await conn.scalar(
                        text("SELECT mode FROM author_feed_modes WHERE author_id = :a"),
                        {"a": p.id},
                    )
                assert mode == "pull"
                for first in (7, 20, 100):
                    assert await walk_feed(gql, r, first) == expected, first

                # FLUSHALL between two pages: every key is rebuilt, the walk goes on.
                async def flush() -> None:
                    flusher = Redis.from_url(url)
                    await flusher.flushall()
                    await flusher.aclose()

                assert await _walk_with(gql, r, 7, after_page={2: flush}) == expected

                # Deletes inside and past P's store window.
                for caption in ("P25", "P05"):
                    out = await gql(DELETE, {"id": gids[caption]}, token=p.token)
                    assert out["data"]["deletePost"]["__typename"] == "DeletePostSuccess"
                    expected.remove(caption)
                await control.drain()
                for first in (7, 20):
                    assert await walk_feed(gql, r, first) == expected, first

                # P flips back to push in the middle of a walk (1 follower < 2).
                async def flip() -> None:
                    await gql(UNFOLLOW, {"id": p.gid}, token=f1.token)
                    await gql(UNFOLLOW, {"id": p.gid}, token=f2.token)
                    await control.drain()
                    await post(gql, p, "P31")
                    await control.drain()

                assert await _walk_with(gql, r, 7, after_page={2: flip}) == expected
                async with engine.connect() as conn:
                    mode = await conn.scalar(
                        text("SELECT mode FROM author_feed_modes WHERE author_id = :a"),
                        {"a": p.id},
                    )
                assert mode == "push"
                for first in (7, 20, 100):
                    assert await walk_feed(gql, r, first) == ["P31", *expected], first
        finally:
            await control.stop()
            own.stop()
            await worker.start()


async def _walk_with(gql, user, first: int, *, after_page) -> list[str]:
    """Walk the feed ``first`` at a time; after page k, await ``after_page[k]()``."""
    seen, after, pages = [], None, 0
    while True:
        out = await gql(FEED, {"first": first, "after": after}, token=user.token)
        assert "errors" not in out, out
        feed = out["data"]["viewer"]["feed"]
        seen += [e["node"]["caption"] for e in feed["edges"]]
        pages += 1
        if pages in after_page:
            await after_page[pages]()
        if not feed["pageInfo"]["hasNextPage"]:
            return seen
        after = feed["pageInfo"]["endCursor"]


# -- 4. merges into a short cached window ------------------------------------------------


async def test_a_follow_merged_below_a_short_cached_window_leaves_no_gap(
    make_users, worker: WorkerControl, settings, engine
):
    """FEED_MAX_LEN=20: B posts b1-b3, then A posts a1-a22; V follows A and reads (its
    cached feed: the newest 20, a3-a22); A deletes a22 and a21 (18 entries left); V
    follows B, whose three posts are older than the window's oldest entry. Every page
    size walks the same 23 posts: the merge must not extend the window over a gap
    (a1, a2 are in no cached entry)."""
    async with small_feeds(settings, engine, worker) as (gql, control):
        a, b, v = await make_users(3)
        for i in range(1, 4):
            await post(gql, b, f"b{i}")
        a_posts = [await post(gql, a, f"a{i}") for i in range(1, 23)]
        await follow_all(gql, [v], a)
        await control.drain()
        assert await feed_captions(gql, v, 1) == ["a22"]  # v's cached feed: a3-a22
        for gid in a_posts[-2:]:
            out = await gql(DELETE, {"id": gid}, token=a.token)
            assert out["data"]["deletePost"]["__typename"] == "DeletePostSuccess"
        await control.drain()
        await follow_all(gql, [v], b)
        await control.drain()
        expected = [f"a{i}" for i in range(20, 0, -1)] + ["b3", "b2", "b1"]
        walks = {first: await walk_feed(gql, v, first) for first in (19, 50, 1, 7, 20)}
        missing = {first: sorted(set(expected) - set(w)) for first, w in walks.items()}
        assert missing == {first: [] for first in walks}
        assert walks == {first: expected for first in walks}


# -- timelines: a removal during a rebuild -----------------------------------------------


async def test_a_removal_during_a_rebuild_is_not_undone_by_the_rebuild(feed):
    redis = feed.redis.client
    tl = RedisTimelines(
        feed.redis, f"tltest{uuid.uuid4().hex[:6]}", max_len=20, ttl=dt.timedelta(days=1)
    )
    owner = uuid.uuid4()
    base = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    entries = [Entry.of(base + dt.timedelta(seconds=i), new_id()) for i in range(5)]
    try:

        async def load() -> list[Entry]:
            # PostgreSQL was read before the newest post was deleted; its removal
            # runs now, while the rebuild is in progress.
            assert await tl.remove(owner, [entries[-1].post_id]) == 0
            # Removed, then added again (a re-follow's merge): kept.
            await tl.remove(owner, [entries[0].post_id])
            assert await tl.add([owner], [entries[0]]) == 1
            await tl.remove(owner, [entries[1].post_id])
            return entries

        assert await tl.rebuild(owner, load)
        (page,) = await tl.page([owner], None, 50)
        assert page == [entries[3], entries[2], entries[0]]
        assert not await redis.exists(tl.key(owner) + ":gone")
    finally:
        await redis.delete(tl.key(owner), tl.key(owner) + ":gone")
