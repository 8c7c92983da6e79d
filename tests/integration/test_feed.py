"""The hybrid home feed against real PostgreSQL, Redis and an arq worker.

Test settings (tests/conftest.py): pull at >= 40 followers, push again under 30,
fan-out pages of 7 followers.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid

from sqlalchemy import text

from domain.db import new_id
from tests.support.actions import feed_captions, follow_all, post, walk_feed
from tests.support.checks import in_cached_feed, stores_for
from tests.support.documents import FEED, FOLLOW, UNFOLLOW


async def test_push_author_post_reaches_each_active_follower_once(feed):
    gql, worker, settings, make_users = feed.gql, feed.worker, feed.settings, feed.make_users
    (author,) = await make_users(1)
    fans = await make_users(20)  # 3 pages of 7
    await follow_all(gql, fans, author)
    await worker.drain()
    for f in fans:  # each fan reads once: their feed key is built (empty)
        assert await feed_captions(gql, f) == []
    pid = await post(gql, author, "hello followers")
    await worker.drain()
    redis, stores = stores_for(settings)
    try:
        for f in fans:
            assert await in_cached_feed(stores, f, pid) is True  # pushed, not rebuilt
            assert await feed_captions(gql, f) == ["hello followers"]
        assert await feed_captions(gql, author) == ["hello followers"]  # own feed too
    finally:
        await redis.aclose()


async def test_inactive_follower_gets_no_push_but_sees_post_on_return(
    gql, make_users, worker, settings, engine
):
    author, sleeper = await make_users(2)
    await gql(FOLLOW, {"id": author.gid}, token=sleeper.token)
    await worker.drain()
    assert await feed_captions(gql, sleeper) == []  # builds sleeper's feed key
    async with engine.begin() as conn:  # sleeper goes quiet for 40 days
        await conn.execute(
            text("UPDATE users SET last_active_at = now() - interval '40 days' WHERE id = :id"),
            {"id": sleeper.id},
        )
    redis, stores = stores_for(settings)
    try:
        await redis.client.delete(f"active:{{{sleeper.id}}}")  # on REDIS_URL
        pid = await post(gql, author, "while you were away")
        await worker.drain()
        assert await in_cached_feed(stores, sleeper, pid) is False  # no push
        # Coming back: the request records activity, drops the stale feed, rebuilds it.
        assert await feed_captions(gql, sleeper) == ["while you were away"]
        assert await in_cached_feed(stores, sleeper, pid) is True
    finally:
        await redis.aclose()


async def test_pull_author_post_is_merged_not_written_per_follower(feed):
    gql, worker, settings, make_users = feed.gql, feed.worker, feed.settings, feed.make_users
    engine = feed.engine
    (celeb,) = await make_users(1)
    fans = await make_users(45)  # >= 40: pull
    await follow_all(gql, fans, celeb)
    await worker.drain()
    for f in fans[:5]:
        assert await feed_captions(gql, f) == []
    pid = await post(gql, celeb, "from the stage")
    await worker.drain()
    redis, stores = stores_for(settings)
    try:
        for f in fans[:5]:
            assert await in_cached_feed(stores, f, pid) is False  # never written per follower
            assert await feed_captions(gql, f) == ["from the stage"]  # merged at read
        async with engine.connect() as conn:
            mode = await conn.scalar(
                text("SELECT mode FROM author_feed_modes WHERE author_id = :a"), {"a": celeb.id}
            )
        assert mode == "pull"
    finally:
        await redis.aclose()


async def test_pull_authors_guessed_from_the_last_read_are_checked_by_the_page(feed):
    """A page reads the pull authors' stores by the list this process saw at the viewer's
    last read and checks it against the list its hydration reads: one statement per page
    once known; a pull author followed or unfollowed since is in or out of the very next
    page."""
    from tests.support.checks import recorded_statements

    gql, worker, make_users = feed.gql, feed.worker, feed.make_users
    pusher, celeb, other, reader = await make_users(4)
    fans = await make_users(45)  # >= 40: celeb and other pull
    await follow_all(gql, fans, celeb)
    await follow_all(gql, fans, other)
    await follow_all(gql, [reader], pusher)
    await follow_all(gql, [reader], other)
    await worker.drain()
    for i in range(1, 5):
        await post(gql, pusher, f"push {i}")
    for i in range(1, 4):  # each store holds more than a page asks: no SQL past it
        await post(gql, celeb, f"celeb {i}")
        await post(gql, other, f"other {i}")
    await worker.drain()

    async def page() -> list[str]:
        return await feed_captions(gql, reader, first=2)

    assert await page() == ["other 3", "other 2"]  # the list is learnt
    with recorded_statements(feed.engine) as statements:
        assert await page() == ["other 3", "other 2"]
    assert len(statements) == 1, statements  # the hydration, which checks the guess

    await gql(FOLLOW, {"id": celeb.gid}, token=reader.token)  # the guess lacks celeb
    assert await page() == ["other 3", "celeb 3"]
    with recorded_statements(feed.engine) as statements:
        assert await page() == ["other 3", "celeb 3"]
    assert len(statements) == 1, statements

    await gql(UNFOLLOW, {"id": other.gid}, token=reader.token)  # the guess has one more
    assert await page() == ["celeb 3", "celeb 2"]
    await gql(UNFOLLOW, {"id": celeb.gid}, token=reader.token)
    await post(gql, reader, "mine")
    await worker.drain()
    assert await page() == ["mine", "push 4"]


async def test_flips_push_to_pull_and_back_lose_and_repeat_nothing(feed):
    gql, worker, settings, make_users = feed.gql, feed.worker, feed.settings, feed.make_users
    engine = feed.engine
    (author,) = await make_users(1)
    fans = await make_users(45)
    await follow_all(gql, fans[:35], author)  # 35 < 40: push
    await worker.drain()
    for f in fans:
        await feed_captions(gql, f)  # build every feed key
    await post(gql, author, "p1 pushed")
    await worker.drain()
    await follow_all(gql, fans[35:], author)  # 45: flips to pull on the next post
    await worker.drain()
    await post(gql, author, "p2 pulled")
    await worker.drain()
    for f in fans:
        assert await feed_captions(gql, f) == ["p2 pulled", "p1 pushed"]
    # Drop to 25 followers (< 30): the next post flips back to push.
    await asyncio.gather(*(gql(UNFOLLOW, {"id": author.gid}, token=f.token) for f in fans[25:]))
    await worker.drain()
    await post(gql, author, "p3 pushed again")
    await worker.drain()
    async with engine.connect() as conn:
        mode = await conn.scalar(
            text("SELECT mode FROM author_feed_modes WHERE author_id = :a"), {"a": author.id}
        )
    assert mode == "push"
    redis, stores = stores_for(settings)
    try:
        for f in fans[:25]:
            assert await feed_captions(gql, f) == ["p3 pushed again", "p2 pulled", "p1 pushed"]
            # p2 now sits in the cached feed too: the flip pushed the pull-period backlog
            (page,) = await stores.feeds.page([f.id], None, 10)
            assert len(page) == 3
        for f in fans[25:]:  # unfollowers see none of the author's posts
            assert await feed_captions(gql, f) == []
    finally:
        await redis.aclose()


async def _insert_posts(engine, author_id, captions, created_at) -> list[uuid.UUID]:
    ids = [new_id() for _ in captions]
    async with engine.begin() as conn:
        await conn.execute(
            text("INSERT INTO posts (id, author_id, caption, created_at) VALUES (:id, :a, :c, :t)"),
            [
                {"id": i, "a": author_id, "c": c, "t": created_at}
                for i, c in zip(ids, captions, strict=True)
            ],
        )
    return ids


async def test_walking_a_feed_with_tied_timestamps_returns_each_post_once(
    gql, make_users, worker, engine
):
    reader, a, b = await make_users(3)
    await follow_all(gql, [reader], a)
    await follow_all(gql, [reader], b)
    await worker.drain()
    tie = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
    await _insert_posts(engine, a.id, [f"a{i}" for i in range(13)], tie)
    await _insert_posts(engine, b.id, [f"b{i}" for i in range(12)], tie)
    await _insert_posts(engine, b.id, ["older"], tie - dt.timedelta(microseconds=1))
    for first in (1, 4, 7):
        seen = await walk_feed(gql, reader, first)
        assert len(seen) == 26 and len(set(seen)) == 26, (first, seen)
        assert seen[-1] == "older"


async def test_cursor_of_a_deleted_post_still_returns_the_next_page(gql, make_users, worker):
    reader, author = await make_users(2)
    await follow_all(gql, [reader], author)
    await worker.drain()
    for i in range(5):
        await post(gql, author, f"n{i}")
    await worker.drain()
    first = (await gql(FEED, {"first": 2}, token=reader.token))["data"]["viewer"]["feed"]
    assert [e["node"]["caption"] for e in first["edges"]] == ["n4", "n3"]
    gone = first["edges"][-1]["node"]["id"]
    out = await gql(
        "mutation($id: ID!) { deletePost(input: { postId: $id }) { __typename } }",
        {"id": gone},
        token=author.token,
    )
    assert out["data"]["deletePost"]["__typename"] == "DeletePostSuccess"
    await worker.drain()
    rest = await gql(
        FEED, {"first": 10, "after": first["pageInfo"]["endCursor"]}, token=reader.token
    )
    assert [e["node"]["caption"] for e in rest["data"]["viewer"]["feed"]["edges"]] == [
        "n2",
        "n1",
        "n0",
    ]


async def test_unfollow_while_fan_out_is_queued_keeps_post_out_of_feed(
    gql, make_users, worker, settings
):
    author, quitter, stayer = await make_users(3)
    await follow_all(gql, [quitter, stayer], author)
    await worker.drain()
    for u in (quitter, stayer):
        await feed_captions(gql, u)
    await worker.stop()  # the fan-out job waits in the queue
    try:
        pid = await post(gql, author, "queued")
        await gql(UNFOLLOW, {"id": author.gid}, token=quitter.token)
    finally:
        await worker.start()
    await worker.drain()
    redis, stores = stores_for(settings)
    try:
        assert await in_cached_feed(stores, quitter, pid) is False
        assert await feed_captions(gql, quitter) == []
        assert await feed_captions(gql, stayer) == ["queued"]
    finally:
        await redis.aclose()


async def test_follow_merges_and_unfollow_removes_recent_posts(feed):
    gql, worker, settings, make_users = feed.gql, feed.worker, feed.settings, feed.make_users
    author, fan = await make_users(2)
    for i in range(3):
        await post(gql, author, f"old{i}")
    await worker.drain()
    assert await feed_captions(gql, fan) == []  # fan's feed key exists, empty
    await follow_all(gql, [fan], author)
    await worker.drain()
    redis, stores = stores_for(settings)
    try:
        (page,) = await stores.feeds.page([fan.id], None, 10)
        assert len(page) == 3  # merged into the cached feed by the follow.created consumer
        assert await feed_captions(gql, fan) == ["old2", "old1", "old0"]
        await gql(UNFOLLOW, {"id": author.gid}, token=fan.token)
        await worker.drain()
        (page,) = await stores.feeds.page([fan.id], None, 10)
        assert page == []
    finally:
        await redis.aclose()


async def test_post_committed_without_dispatch_is_relayed(
    make_users, worker, settings, engine, gql
):
    """A crash between commit and enqueue: the relay re-drives the outbox row."""
    from domain.posts.create_post import create_post

    author, fan = await make_users(2)
    await follow_all(gql, [fan], author)
    await worker.drain()
    await feed_captions(gql, fan)
    await create_post(engine, author.id, caption="relayed", counter_shards=4, dispatcher=None)
    await worker.drain()
    assert await feed_captions(gql, fan) == ["relayed"]


async def test_the_viewer_above_a_feed_reads_its_account_only_for_a_profile_field(
    gql, make_users, worker, engine
):
    """``viewer { id feed }`` needs nothing of the account but its id (the admitted session
    vouches for it): the page's hydration is its one statement; any other field of the
    viewer, directly or through a fragment, reads the account."""
    from tests.support.checks import measured

    (reader,) = await make_users(1)
    for caption in ("old", "older", "mine"):  # more than a page: no SQL past the window
        await post(gql, reader, caption)
    await worker.drain()
    page = "feed(first: 1) { edges { node { caption } } }"
    data, statements = await measured(
        gql, engine, f"{{ viewer {{ id __typename {page} }} }}", {}, reader.token
    )
    assert data["viewer"]["id"] == reader.gid and data["viewer"]["__typename"] == "User"
    assert data["viewer"]["feed"]["edges"] == [{"node": {"caption": "mine"}}]
    assert len(statements) == 1, statements
    for query in (
        f"{{ viewer {{ {page} ... on User {{ username }} }} }}",
        f"fragment F on User {{ username }} {{ viewer {{ ...F {page} }} }}",
    ):
        data, statements = await measured(gql, engine, query, {}, reader.token)
        assert data["viewer"]["username"] == reader.username
        assert data["viewer"]["feed"]["edges"] == [{"node": {"caption": "mine"}}]
        assert len(statements) == 2, statements  # the account, then the page


async def test_a_reader_banned_behind_the_session_cache_gets_no_page(
    gql, make_users, worker, engine
):
    """A ban the session cache has not seen yet (set in SQL here): ``viewer { id feed }``,
    which reads no row of the viewer, still serves nothing: the page's hydration reads the
    reader's status and the feed answers UNAUTHENTICATED; with a profile field the viewer
    is null, as before."""
    author, reader = await make_users(2)
    await follow_all(gql, [reader], author)
    await worker.drain()
    for i in range(3):
        await post(gql, author, f"by author {i}")
    await worker.drain()
    query = "{ viewer { id feed(first: 2) { edges { node { caption } } } } }"
    served = await gql(query, {}, token=reader.token)  # the admission is now cached
    assert [e["node"]["caption"] for e in served["data"]["viewer"]["feed"]["edges"]] == [
        "by author 2",
        "by author 1",
    ]

    async def set_status(status: str) -> None:  # behind the use cases: no count moves
        async with engine.begin() as conn:
            await conn.execute(
                text("UPDATE users SET status = :s WHERE id = :id"), {"s": status, "id": reader.id}
            )

    await set_status("banned")
    try:
        refused = await gql(query, {}, token=reader.token)
        assert refused["data"]["viewer"]["feed"] is None, refused
        assert [e["extensions"]["code"] for e in refused["errors"]] == ["UNAUTHENTICATED"]
        named = await gql(
            "{ viewer { username feed(first: 2) { edges { node { id } } } } }",
            {},
            token=reader.token,
        )
        assert named["data"]["viewer"] is None, named
    finally:  # the counts the run verifies stay exact
        await set_status("active")
