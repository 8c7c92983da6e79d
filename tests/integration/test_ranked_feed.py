"""The ranked home feed (docs/architecture/home-feed.md "Home feed", Ranked order) against
real PostgreSQL, Redis (one Redis and a Redis Cluster) and an arq worker: the signals
the like and comment consumers keep, the score's effect, frozen pages while scores
change, and cursors.

Test settings (tests/conftest.py): FEED_RANKED_WINDOW=6, so a dozen posts walk through
the frozen window and on into the chronological continuation.
"""

from __future__ import annotations

import asyncio

from redis.asyncio import Redis
from sqlalchemy import text

from adapters.feedstore import FeedRedis
from adapters.feedstore.ranked_windows import RedisRankedWindows
from adapters.feedstore.ranking_signals import (
    RedisRankingSignals,
    author_key,
    close_key,
    kinds_key,
    velocity_key,
)
from domain.db import new_id
from domain.feed.ranking_consumers import ranking_consumer
from domain.outbox.events import CommentCreated, LikeCreated
from domain.posts.create_post import create_post
from schema.feed.ranked import decode_ranked_cursor
from schema.ids import decode_global_id
from tests.support.actions import post
from tests.support.documents import FOLLOW
from tests.support.redis_trips import COUNTING, RoundTrips

FEED = """query($first: Int!, $after: String, $order: FeedOrder!) { viewer {
  feed(first: $first, after: $after, order: $order) {
    edges { cursor node { caption } } pageInfo { hasNextPage endCursor } } } }"""
LIKE = """mutation($id: ID!) { likePost(input: { postId: $id }) { __typename } }"""
COMMENT = """mutation($id: ID!, $b: String!) { addComment(input: { postId: $id, body: $b }) {
  __typename } }"""
DELETE = """mutation($id: ID!) { deletePost(input: { postId: $id }) { __typename } }"""


async def follow(gql, fan, *stars) -> None:
    for star in stars:
        out = await gql(FOLLOW, {"id": star.gid}, token=fan.token)
        assert out["data"]["follow"]["__typename"] == "FollowSuccess", out


async def page(gql, user, first: int, after: str | None = None, order: str = "RANKED"):
    out = await gql(FEED, {"first": first, "after": after, "order": order}, token=user.token)
    assert "errors" not in out, out
    feed = out["data"]["viewer"]["feed"]
    return [e["node"]["caption"] for e in feed["edges"]], feed["pageInfo"]


async def walk(gql, user, first: int, after: str | None = None, order: str = "RANKED"):
    seen: list[str] = []
    while True:
        captions, info = await page(gql, user, first, after, order)
        seen += captions
        if not info["hasNextPage"]:
            return seen
        assert captions, "a page is never empty while posts follow"
        after = info["endCursor"]


async def error_code(gql, user, after: str, order: str = "RANKED") -> str:
    out = await gql(FEED, {"first": 3, "after": after, "order": order}, token=user.token)
    assert out["data"]["viewer"]["feed"] is None, out
    return out["errors"][0]["extensions"]["code"]


async def test_a_liked_authors_older_post_outranks_a_strangers_newer_one(feed):
    gql, worker = feed.gql, feed.worker
    viewer, friend, stranger, other = await feed.make_users(4, prefix="rk")
    await follow(gql, viewer, friend, stranger)
    await follow(gql, other, friend, stranger)
    await worker.drain()
    liked = await post(gql, friend, "friend, liked")
    await post(gql, friend, "friend, older")
    await post(gql, stranger, "stranger, newer")
    await worker.drain()
    assert (await gql(LIKE, {"id": liked}, token=viewer.token))["data"]["likePost"][
        "__typename"
    ] == "LikePostSuccess"
    await worker.drain()

    recent = await walk(gql, viewer, 10, order="RECENT")
    assert recent == ["stranger, newer", "friend, older", "friend, liked"]
    ranked = await walk(gql, viewer, 10)
    assert sorted(ranked) == sorted(recent)
    # Proximity: the viewer liked a post of the friend, so the friend's older post
    # (which nobody liked) outranks the stranger's newer one ...
    assert ranked.index("friend, older") < ranked.index("stranger, newer")
    # ... for the viewer only: someone who follows both and liked nothing sees the
    # stranger's newer post first.
    theirs = await walk(gql, other, 10)
    assert theirs.index("stranger, newer") < theirs.index("friend, older")
    # The consumers' signals, in the feed store.
    assert await feed.redis.zscore(close_key(viewer.id), friend.id.bytes) is not None
    assert await feed.redis.zcard(kinds_key(viewer.id)) == 1
    liked_id = decode_global_id(liked, "Post", "id")
    assert await feed.redis.zcard(velocity_key(liked_id)) == 1


async def test_pages_never_repeat_or_skip_while_scores_change(feed):
    gql, worker = feed.gql, feed.worker
    viewer, a, b, c, fan = await feed.make_users(5, prefix="rp")
    await follow(gql, viewer, a, b, c)
    await worker.drain()
    authors = [a, b, c]
    ids = {}
    for i in range(12):  # p11 newest; c wrote p02, p05, p08, p11
        ids[f"p{i:02}"] = await post(gql, authors[i % 3], f"p{i:02}")
    await worker.drain()
    everything = {f"p{i:02}" for i in range(12)}

    first, info = await page(gql, viewer, 4)
    # No signal yet: the window (the newest 6) ranks newest first.
    assert first == ["p11", "p10", "p09", "p08"]
    assert info["hasNextPage"]

    # Between two pages: the viewer now likes and comments on a's posts (proximity
    # x1.5 for a), a fan likes b's (velocity), p07 is deleted and a new post arrives.
    for key in ("p00", "p03"):
        await gql(LIKE, {"id": ids[key]}, token=viewer.token)
    await gql(COMMENT, {"id": ids["p06"], "b": "nice"}, token=viewer.token)
    for key in ("p04", "p07", "p10"):
        await gql(LIKE, {"id": ids[key]}, token=fan.token)
    assert (await gql(DELETE, {"id": ids["p07"]}, token=b.token))["data"]["deletePost"][
        "__typename"
    ] == "DeletePostSuccess"
    await post(gql, c, "p12")
    await worker.drain()

    fresh = await walk(gql, viewer, 4)
    rest = await walk(gql, viewer, 4, info["endCursor"])
    walked = first + rest
    assert len(walked) == len(set(walked)), walked  # nothing repeated
    assert set(walked) == everything - {"p07"}, walked  # nothing skipped but the deleted
    # The frozen window keeps its order (p06 after p08, though a's post now scores
    # x1.5), then the feed goes on newest first past the window.
    assert walked == ["p11", "p10", "p09", "p08", "p06", "p05", "p04", "p03", "p02", "p01", "p00"]
    # The scores did change: a walk from the top ranks a's p06 above newer posts.
    assert fresh != walked and "p12" in fresh
    assert fresh.index("p06") < fresh.index("p08")


async def test_cursors_are_checked_and_expire_as_typed_errors(feed):
    gql, worker = feed.gql, feed.worker
    viewer, author, someone = await feed.make_users(3, prefix="rc")
    await follow(gql, viewer, author)
    await follow(gql, someone, author)
    await worker.drain()
    for i in range(5):
        await post(gql, author, f"c{i}")
    await worker.drain()

    _, ranked = await page(gql, viewer, 2)
    _, recent = await page(gql, viewer, 2, order="RECENT")
    assert await error_code(gql, viewer, "not-a-cursor") == "BAD_USER_INPUT"
    assert await error_code(gql, viewer, recent["endCursor"]) == "BAD_USER_INPUT"
    assert await error_code(gql, viewer, ranked["endCursor"], "RECENT") == "BAD_USER_INPUT"
    # Someone else's window is not theirs to read.
    assert await error_code(gql, someone, ranked["endCursor"]) == "CURSOR_EXPIRED"

    # The window lives FEED_RANKED_FREEZE_S after its last read, then expires.
    window_id = decode_ranked_cursor(ranked["endCursor"]).window_id
    assert window_id is not None
    key = RedisRankedWindows.key(viewer.id, window_id)
    ttl = await feed.redis.ttl(key)
    assert 0 < ttl <= feed.settings.feed_ranked_freeze_s
    captions, _ = await page(gql, viewer, 2, ranked["endCursor"])
    assert captions == ["c2", "c1"]
    await feed.redis.delete(key)
    assert await error_code(gql, viewer, ranked["endCursor"]) == "CURSOR_EXPIRED"
    # Reading from the top again works.
    assert (await page(gql, viewer, 2))[0] == ["c4", "c3"]


async def test_a_viewer_reading_pages_concurrently_gets_one_window_each(feed):
    """Two first pages at once freeze two windows; each walk is whole on its own."""
    gql, worker = feed.gql, feed.worker
    viewer, author = await feed.make_users(2, prefix="rw")
    await follow(gql, viewer, author)
    await worker.drain()
    for i in range(9):
        await post(gql, author, f"w{i}")
    await worker.drain()
    walks = await asyncio.gather(*(walk(gql, viewer, 2) for _ in range(4)))
    expected = [f"w{i}" for i in range(8, -1, -1)]
    assert all(w == expected for w in walks), walks


CREATE_MEDIA = """mutation($c: String!, $k: MediaKind!) { createPost(input: { caption: $c,
  media: [{ url: "https://cdn.example.org/f", kind: $k }] }) {
  __typename ... on CreatePostSuccess { post { id } } } }"""


async def media_post(gql, author, caption: str, kind: str) -> str:
    out = (await gql(CREATE_MEDIA, {"c": caption, "k": kind}, token=author.token))["data"]
    assert out["createPost"]["__typename"] == "CreatePostSuccess", out
    return out["createPost"]["post"]["id"]


async def test_mostly_video_interactions_put_video_posts_first(feed):
    gql, worker = feed.gql, feed.worker
    viewer, other, filmer, snapper, elsewhere = await feed.make_users(5, prefix="rv")
    await follow(gql, viewer, filmer, snapper)
    await follow(gql, other, filmer, snapper)
    await worker.drain()
    # The viewer likes five videos of an account they do not follow (so no proximity
    # to the authors of their feed): their last interactions are mostly video.
    for i in range(5):
        clip = await media_post(gql, elsewhere, f"clip {i}", "VIDEO")
        await gql(LIKE, {"id": clip}, token=viewer.token)
    await media_post(gql, filmer, "a video", "VIDEO")
    await media_post(gql, snapper, "a newer photo", "IMAGE")
    await worker.drain()
    assert await walk(gql, viewer, 10, order="RECENT") == ["a newer photo", "a video"]
    assert await walk(gql, viewer, 10) == ["a video", "a newer photo"]  # x1.2
    assert await walk(gql, other, 10) == ["a newer photo", "a video"]


MUTE = """mutation($id: ID!) { mute(input: { userId: $id }) { __typename } }"""
UNFOLLOW = """mutation($id: ID!) { unfollow(input: { userId: $id }) { __typename } }"""


async def test_the_visibility_rule_holds_on_every_ranked_page(feed):
    gql, worker = feed.gql, feed.worker
    viewer, kept, muted, dropped = await feed.make_users(4, prefix="rh")
    await follow(gql, viewer, kept, muted, dropped)
    await worker.drain()
    for i in range(4):
        for name, who in (("kept", kept), ("muted", muted), ("dropped", dropped)):
            await post(gql, who, f"{name}-{i}")
    await worker.drain()
    first, info = await page(gql, viewer, 2)
    # Muted and unfollowed between two pages: the frozen window still names their posts,
    # and the next pages drop them (the same check as the chronological feed).
    assert (await gql(MUTE, {"id": muted.gid}, token=viewer.token))["data"]["mute"]
    assert (await gql(UNFOLLOW, {"id": dropped.gid}, token=viewer.token))["data"]["unfollow"]
    await worker.drain()
    rest = await walk(gql, viewer, 2, info["endCursor"])
    assert first == ["dropped-3", "muted-3"]
    assert rest == ["kept-3", "kept-2", "kept-1", "kept-0"]
    assert await walk(gql, viewer, 5) == ["kept-3", "kept-2", "kept-1", "kept-0"]


HYDRATED = """query($first: Int!, $after: String, $order: FeedOrder! = RANKED) { viewer {
  feed(first: $first, after: $after, order: $order) {
    edges { cursor node { caption likeCount viewerHasLiked
      author { username followerCount followedByViewer } } }
    pageInfo { hasNextPage endCursor } } } }"""


async def test_ranked_pages_cost_constant_sql(feed):
    """A ranked page costs the same statements whatever its size, first page (ranking the
    window) or next (a slice of it, then the continuation past it): a first page
    costs those of the chronological page plus two (the window's authors and media
    kinds, and the pull authors, which a chronological page reads with its hydration)."""
    from tests.support.checks import measured

    gql, worker = feed.gql, feed.worker
    viewer, *authors = await feed.make_users(9, prefix="rq")
    await follow(gql, viewer, *authors)
    await worker.drain()
    for i in range(3):
        for n, a in enumerate(authors):
            await post(gql, a, f"q{i}-{n}")
    await worker.drain()
    _, chronological = await measured(
        gql, feed.engine, HYDRATED, {"first": 5, "order": "RECENT"}, viewer.token
    )
    counts = {}
    for first in (2, 5):
        data, statements = await measured(
            gql, feed.engine, HYDRATED, {"first": first}, viewer.token
        )
        assert len(data["viewer"]["feed"]["edges"]) == first
        counts[first] = len(statements)
    assert counts[2] == counts[5] == len(chronological) + 2, (counts, chronological)
    # Every next page too: slices of the window, the page that crosses its end, and
    # the continuation past it (24 posts, a window of 6, pages of 5).
    after, pages = data["viewer"]["feed"]["pageInfo"]["endCursor"], []
    while after is not None:
        data, statements = await measured(
            gql, feed.engine, HYDRATED, {"first": 5, "after": after}, viewer.token
        )
        pages.append(len(statements))
        feed_page = data["viewer"]["feed"]
        after = feed_page["pageInfo"]["endCursor"] if feed_page["pageInfo"]["hasNextPage"] else None
    # A slice costs no more than a chronological page; the page that crosses the
    # window's end checks two batches (the window's rest, then the continuation's).
    assert len(pages) == 4, pages
    assert min(pages) <= len(chronological), (pages, chronological)
    assert max(pages) <= 2 * len(chronological), (pages, chronological)


async def test_a_ranked_first_page_costs_two_redis_round_trips_more_than_a_chronological_one(
    single_env, monkeypatch
):
    """On one Redis (one write per round trip): the ranked first page reads every signal
    in one round trip (viewer, velocities and the authors' averages) and freezes its
    window in one more; nothing else beyond the chronological page's."""
    feed = single_env
    gql, worker = feed.gql, feed.worker
    viewer, *authors = await feed.make_users(4, prefix="rt")
    await follow(gql, viewer, *authors)
    await worker.drain()
    for i in range(3):
        for n, a in enumerate(authors):
            await post(gql, a, f"t{i}-{n}")
    await worker.drain()
    liked = await post(gql, authors[0], "liked")
    await gql(LIKE, {"id": liked}, token=viewer.token)
    await worker.drain()  # a velocity, an author's average, a proximity and a kind

    counter = RoundTrips(monkeypatch)

    async def trips(order: str) -> int:
        token = COUNTING.set(False)
        await page(gql, viewer, 5, order=order)  # warm: the feed is in Redis
        COUNTING.reset(token)
        before = counter.count
        captions, _ = await page(gql, viewer, 5, order=order)
        assert len(captions) == 5
        return counter.count - before

    assert await trips("RANKED") == await trips("RECENT") + 2


async def test_unreachable_redis_serves_the_chronological_order(
    gql, make_users, worker, settings, engine
):
    import httpx

    from app.asgi import create_app
    from tests.support.graphql import GQL

    viewer, a, b = await make_users(3, prefix="rd")
    await follow(gql, viewer, a, b)
    await worker.drain()
    for i in range(4):
        await post(gql, a, f"a{i}")
        await post(gql, b, f"b{i}")
    await gql(LIKE, {"id": await post(gql, a, "liked")}, token=viewer.token)
    await worker.drain()
    _, window = await page(gql, viewer, 2)
    down = create_app(
        settings.model_copy(update={"redis_url": "redis://127.0.0.1:1/0"}), engine=engine
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=down), base_url="http://roost.test"
    ) as client:
        down_gql = GQL(client)
        # No signals, no frozen window: the chronological order, from PostgreSQL, with
        # cursors that continue it.
        assert await walk(down_gql, viewer, 3) == await walk(gql, viewer, 3, order="RECENT")
        assert await error_code(down_gql, viewer, window["endCursor"]) == "CURSOR_EXPIRED"


async def test_an_engagement_whose_job_runs_after_its_undoing_records_nothing(
    engine, settings, make_users
):
    """Jobs run in any order: a like's job after its unlike, or a comment's after its
    deletion (or after the actor's purge), finds the engagement gone and records no
    signal; a like that is there is recorded."""
    redis = Redis.from_url(settings.redis_url)
    try:
        signals = RedisRankingSignals(FeedRedis(redis), settings.feed_config.ranking)
        consumer = ranking_consumer(engine, signals)
        author, fan = await make_users(2, prefix="ro")
        p = await create_post(
            engine, author.id, caption="undone", counter_shards=settings.counter_shards
        )
        comment_id = new_id()
        async with engine.begin() as conn:  # a comment already deleted; no like at all
            await conn.execute(
                text(
                    "INSERT INTO comments (id, post_id, author_id, body, deleted_at)"
                    " VALUES (:c, :p, :a, 'gone', now())"
                ),
                {"c": comment_id, "p": p.id, "a": fan.id},
            )
        await consumer[LikeCreated](LikeCreated(p.id, fan.id, author.id), new_id())
        created = CommentCreated(comment_id, p.id, fan.id, author.id, None, None, "gone")
        await consumer[CommentCreated](created, new_id())
        keys = [velocity_key(p.id), close_key(fan.id), kinds_key(fan.id), author_key(author.id)]
        assert await redis.exists(*keys) == 0

        async with engine.begin() as conn:  # the like is there now: its job records it
            await conn.execute(
                text("INSERT INTO likes (post_id, user_id) VALUES (:p, :u)"),
                {"p": p.id, "u": fan.id},
            )
        await consumer[LikeCreated](LikeCreated(p.id, fan.id, author.id), new_id())
        assert await redis.zscore(velocity_key(p.id), f"l:{fan.id}") is not None
        assert await redis.exists(*keys) == 4
    finally:
        await redis.aclose()


BACK = """query($f: Int, $a: String, $l: Int, $b: String) { viewer {
  feed(first: $f, after: $a, last: $l, before: $b, order: RANKED) {
    edges { cursor node { caption } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } }"""


async def back(gql, user, last: int, before: str | None) -> dict:
    out = await gql(BACK, {"l": last, "b": before}, token=user.token)
    assert "errors" not in out, out
    return out["data"]["viewer"]["feed"]


async def walk_back(gql, user, last: int, before: str | None = None) -> list[dict]:
    """Backward from ``before`` (None: the end) to the top; each page checked."""
    pages = []
    while True:
        feed = await back(gql, user, last, before)
        edges, info = feed["edges"], feed["pageInfo"]
        assert info["hasNextPage"] is (before is not None)
        assert len(edges) == last or not info["hasPreviousPage"], feed
        assert [info["startCursor"], info["endCursor"]] == [
            edges[0]["cursor"],
            edges[-1]["cursor"],
        ]
        pages.insert(0, edges)
        if not info["hasPreviousPage"]:
            return [e for p in pages for e in p]
        before = info["startCursor"]


async def test_backward_pages_walk_the_same_frozen_list(feed):
    """A ranked list is its frozen window, then the chronological continuation past its
    tail: ``before`` a cursor of either part pages back through the same list (the
    window's order kept, the continuation's posts newer than the cursor, then the
    window's last), and ``last`` alone freezes a window and reads the list's end."""
    gql, worker = feed.gql, feed.worker
    viewer, a, b, c = await feed.make_users(4, prefix="rb")
    await follow(gql, viewer, a, b, c)
    await worker.drain()
    authors = [a, b, c]
    ids = {}
    for i in range(12):  # p11 newest; a wrote p00, p03, p06, p09
        ids[f"p{i:02}"] = await post(gql, authors[i % 3], f"p{i:02}")
    await worker.drain()
    for key in ("p00", "p03"):  # proximity x1.5 for a: its p06 ranks above newer posts
        assert "errors" not in await gql(LIKE, {"id": ids[key]}, token=viewer.token)
    await worker.drain()

    forward, after = [], None
    while True:
        out = await gql(BACK, {"f": 5, "a": after}, token=viewer.token)
        assert "errors" not in out, out
        feed_page = out["data"]["viewer"]["feed"]
        forward += feed_page["edges"]
        if not feed_page["pageInfo"]["hasNextPage"]:
            break
        after = feed_page["pageInfo"]["endCursor"]
    captions = [e["node"]["caption"] for e in forward]
    assert sorted(captions) == sorted(ids), captions
    assert captions[:6] != sorted(captions[:6], reverse=True)  # ranked, not by recency
    assert captions[6:] == [f"p{i:02}" for i in range(5, -1, -1)]  # past the tail p06
    cursors = [e["cursor"] for e in forward]

    # Before a cursor of this walk: the same window, the same edges and cursors.
    for size in (1, 2, 4, 11):
        assert await walk_back(gql, viewer, size, cursors[-1]) == forward[:-1], size
    for k, size in ((7, 3), (6, 2), (5, 5), (8, 1), (3, 3)):
        page_ = await back(gql, viewer, size, cursors[k])
        assert page_["edges"] == forward[max(0, k - size) : k], (k, size)
        assert page_["pageInfo"]["hasPreviousPage"] is (k > size), (k, size)
    # From the end: a window frozen anew, the same order (the signals are unchanged).
    for size in (1, 5, 12):
        walked = await walk_back(gql, viewer, size)
        assert [e["node"]["caption"] for e in walked] == captions, size

    # A post deleted since: left out backward too, hasPreviousPage exact.
    top = captions[0]
    out = await gql(DELETE, {"id": ids[top]}, token=authors[int(top[1:]) % 3].token)
    assert out["data"]["deletePost"]["__typename"] == "DeletePostSuccess", out
    page_ = await back(gql, viewer, 2, cursors[2])
    assert page_["edges"] == forward[1:2]
    assert page_["pageInfo"]["hasPreviousPage"] is False

    # Bad arguments, another order's cursor, an expired window.
    _, recent = await page(gql, viewer, 2, order="RECENT")
    for variables in ({"a": cursors[1], "b": cursors[2]}, {"a": cursors[1], "l": 2}):
        out = await gql(BACK, variables, token=viewer.token)
        assert [e["extensions"]["code"] for e in out["errors"]] == ["BAD_USER_INPUT"], out
    for bad in (recent["endCursor"], "not-a-cursor"):
        out = await gql(BACK, {"l": 2, "b": bad}, token=viewer.token)
        assert [e["extensions"]["code"] for e in out["errors"]] == ["BAD_USER_INPUT"], out
    window_id = decode_ranked_cursor(cursors[2]).window_id
    assert window_id is not None and decode_ranked_cursor(cursors[-1]).walk == window_id
    await feed.redis.delete(RedisRankedWindows.key(viewer.id, window_id))
    for cursor in (cursors[2], cursors[-1]):
        out = await gql(BACK, {"l": 2, "b": cursor}, token=viewer.token)
        assert [e["extensions"]["code"] for e in out["errors"]] == ["CURSOR_EXPIRED"], out
