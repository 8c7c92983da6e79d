"""Explore (docs/api/explore.md "Explore") against real PostgreSQL, Redis (one Redis and a Redis
Cluster) and an arq worker: the trending posts the like and comment consumers keep, the
exclusions of the one visibility rule, the fallback for a viewer who follows everyone,
posts deleted or authors banned gone at once, frozen pages while scores move, the video
variant, cursors, and the cost of a page.

The run has its own trending keys (EXPLORE_TRENDING_KEY in tests/conftest.py) but its
tests share them, so each test asserts about its own posts only.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid

from adapters.feedstore.trending import RedisTrending
from domain.db import utcnow
from domain.explore.config import ExploreConfig
from domain.explore.read_explore import read_explore
from domain.explore.read_hashtag import read_ranked_hashtag
from domain.feed.config import FeedConfig
from domain.feed.hydration import Wanted
from domain.feed.post_filter import PostFilter
from domain.moderation.set_user_status import set_user_status
from domain.visibility.rules import in_explore
from schema.ids import decode_global_id
from tests.support.actions import follow_all, make_private, post
from tests.support.checks import sql_log
from tests.support.documents import BLOCK, COMMENT, FOLLOW, LIKE

EXPLORE = """query($first: Int!, $after: String, $kind: MediaKind) {
  explore(first: $first, after: $after, kind: $kind) {
    edges { cursor node { id caption author { username } } }
    pageInfo { hasNextPage endCursor } } }"""
MUTE = """mutation($id: ID!) { mute(input: { userId: $id }) { __typename } }"""
DELETE = """mutation($id: ID!) { deletePost(input: { postId: $id }) { __typename } }"""
VIDEO_POST = """mutation($c: String!) { createPost(input: { caption: $c, media: [
  { url: "https://example.com/clip.mp4", kind: VIDEO }] }) {
  ... on CreatePostSuccess { post { id } } } }"""
IMAGE_POST = """mutation($c: String!) { createPost(input: { caption: $c, media: [
  { url: "https://example.com/a.jpg", kind: IMAGE }] }) {
  ... on CreatePostSuccess { post { id } } } }"""


async def page(gql, user, first: int, after: str | None = None, kind: str | None = None):
    out = await gql(EXPLORE, {"first": first, "after": after, "kind": kind}, token=user.token)
    assert "errors" not in out, out
    explore = out["data"]["explore"]
    return [e["node"]["caption"] for e in explore["edges"]], explore["pageInfo"]


async def walk(gql, user, first: int = 7, kind: str | None = None) -> list[str]:
    seen: list[str] = []
    after = None
    while True:
        captions, info = await page(gql, user, first, after, kind)
        seen += captions
        if not info["hasNextPage"]:
            return seen
        assert captions, "a page is never empty while posts follow"
        after = info["endCursor"]


async def engage(gql, post_id: str, fans, *, comments: int = 0) -> None:
    for fan in fans:
        out = await gql(LIKE, {"id": post_id}, token=fan.token)
        assert out["data"]["likePost"]["__typename"] == "LikePostSuccess", out
    for fan in fans[:comments]:
        out = await gql(COMMENT, {"id": post_id, "body": "nice"}, token=fan.token)
        assert out["data"]["addComment"]["__typename"] == "AddCommentSuccess", out


async def test_explore_shows_strangers_trending_posts_through_the_one_rule(feed):
    gql, worker = feed.gql, feed.worker
    viewer, friend, stranger, muted, blocker, blocked, hidden, quiet, *fans = await feed.make_users(
        12, prefix="ex"
    )
    await follow_all(gql, [viewer], friend)
    await make_private(gql, hidden)
    ids = {}
    for who, caption in [
        (viewer, "mine"),
        (friend, "friend's"),
        (stranger, "stranger's"),
        (muted, "muted's"),
        (blocker, "blocker's"),
        (blocked, "blocked's"),
        (hidden, "private's"),
        (quiet, "nobody liked"),
    ]:
        ids[caption] = await post(gql, who, caption)
    await gql(MUTE, {"id": muted.gid}, token=viewer.token)
    await gql(BLOCK, {"id": blocked.gid}, token=viewer.token)
    await gql(BLOCK, {"id": viewer.gid}, token=blocker.token)
    await follow_all(gql, fans, hidden)  # requests: the fans cannot like its post
    for caption, pid in ids.items():
        if caption not in ("nobody liked", "private's"):
            await engage(gql, pid, fans)
    await worker.drain()

    seen = await walk(gql, viewer)
    mine = [c for c in seen if c in ids]
    # The stranger first (not followed), then the friend (followed: the fallback);
    # never the viewer's own, the muted, the blocked either way, the private one, nor
    # a post nobody engaged with (not trending).
    assert mine == ["stranger's", "friend's"], seen
    # Someone else sees the viewer's post and the muted one.
    other = await walk(gql, fans[0])
    assert {"mine", "muted's", "stranger's", "friend's"} <= set(other), other
    assert "private's" not in other


async def test_a_viewer_who_follows_everyone_still_gets_a_page(single_env):
    """A pool of its own (the run's is shared): every trending post is by an account the
    viewer follows, and explore still gives them, most engaged first."""
    gql, engine = single_env.gql, single_env.engine
    viewer, a, b, stranger = await single_env.make_users(4, prefix="exf")
    await follow_all(gql, [viewer], a)
    await follow_all(gql, [viewer], b)
    hot = decode_global_id(await post(gql, a, "everyone's hot"), "Post", "id")
    warm = decode_global_id(await post(gql, b, "everyone's warm"), "Post", "id")
    mine = decode_global_id(await post(gql, viewer, "the viewer's own"), "Post", "id")
    config = FeedConfig(explore=ExploreConfig(namespace=f"trend-all-{uuid.uuid4().hex[:8]}"))
    stores = dataclasses.replace(
        single_env.stores, trending=RedisTrending(single_env.redis, config.explore)
    )
    now = utcnow()
    for pid, n in ((hot, 5), (warm, 2), (mine, 9)):
        for _ in range(n):
            await stores.trending.bump(pid, "text", now, now)

    rule = PostFilter(engine, viewer.id, Wanted(), in_explore)  # the rule, as the schema asks

    page = await read_explore(
        engine, stores, config, viewer.id, kind=None, first=5, after=None, visible=rule, now=now
    )
    assert [e.post_id for e, _ in page.items] == [hot, warm], page
    assert not page.has_next
    # A stranger's trending post comes before them (not followed: the discovery part).
    other = decode_global_id(await post(gql, stranger, "a stranger's"), "Post", "id")
    await stores.trending.bump(other, "text", now, now)
    page = await read_explore(
        engine, stores, config, viewer.id, kind=None, first=5, after=None, visible=rule, now=now
    )
    assert [e.post_id for e, _ in page.items] == [other, hot, warm], page


async def test_a_deleted_post_or_banned_author_is_gone_at_once(single_env, settings):
    gql, worker, engine = single_env.gql, single_env.worker, single_env.engine
    viewer, deleter, banned, kept, *fans = await single_env.make_users(7, prefix="exd")
    doomed = await post(gql, deleter, "deleted soon")
    theirs = await post(gql, banned, "banned soon")
    await post(gql, banned, "banned's quiet one")
    stays = await post(gql, kept, "stays")
    for pid in (doomed, theirs, stays):
        await engage(gql, pid, fans)
    await worker.drain()
    assert {"deleted soon", "banned soon", "stays"} <= set(await walk(gql, viewer))
    _, info = await page(gql, viewer, 1)  # a window frozen with them in it

    await worker.stop()  # no consumer runs: the read-time rule alone hides them
    try:
        assert (await gql(DELETE, {"id": doomed}, token=deleter.token))["data"]["deletePost"][
            "__typename"
        ] == "DeletePostSuccess"
        assert await set_user_status(
            engine, banned.id, "banned", counter_shards=settings.counter_shards
        )
        seen = await walk(gql, viewer)
        assert "stays" in seen and "deleted soon" not in seen and "banned soon" not in seen
        # ... in a window frozen before, too.
        rest = await walk_from(gql, viewer, info["endCursor"])
        assert "deleted soon" not in rest and "banned soon" not in rest
    finally:
        await worker.start()
    await worker.drain()
    # The events' consumer took them out of the trending posts.
    pooled = {p for p, _ in await single_env.stores.trending.top("all", 10_000, utcnow())}
    gone = {decode_global_id(g, "Post", "id") for g in (doomed, theirs)}
    assert not pooled & gone
    assert decode_global_id(stays, "Post", "id") in pooled


async def walk_from(gql, user, after: str) -> list[str]:
    seen: list[str] = []
    while after:
        captions, info = await page(gql, user, 3, after)
        seen += captions
        after = info["endCursor"] if info["hasNextPage"] else None
    return seen


async def test_pages_never_repeat_or_skip_while_scores_move(single_env):
    gql, worker = single_env.gql, single_env.worker
    viewer, *authors = await single_env.make_users(7, prefix="exp")
    fans = await single_env.make_users(4, prefix="expf")
    ids = {}
    for i, a in enumerate(authors):
        ids[f"moving {i}"] = await post(gql, a, f"moving {i}")
        await engage(gql, ids[f"moving {i}"], fans[: 1 + i % 3])
    await worker.drain()
    ours = set(ids)
    seen: list[str] = []
    after = None
    step = 0
    while True:
        captions, info = await page(gql, viewer, 2, after)
        seen += captions
        # Between pages, the last shown posts gain engagement and the rest lose it.
        for fan in fans:
            for caption in list(ids)[step % 3 :: 3]:
                await gql(LIKE, {"id": ids[caption]}, token=fan.token)
        await worker.drain()
        step += 1
        if not info["hasNextPage"]:
            break
        after = info["endCursor"]
    mine = [c for c in seen if c in ours]
    assert len(mine) == len(set(mine)), seen  # nothing twice
    assert set(mine) == ours, seen  # nothing skipped


async def test_the_video_variant_keeps_video_posts(single_env):
    gql, worker = single_env.gql, single_env.worker
    viewer, author, *fans = await single_env.make_users(4, prefix="exv")
    clip = (await gql(VIDEO_POST, {"c": "a clip"}, token=author.token))["data"]["createPost"]
    photo = (await gql(IMAGE_POST, {"c": "a photo"}, token=author.token))["data"]["createPost"]
    words = await post(gql, author, "just words")
    for pid in (clip["post"]["id"], photo["post"]["id"], words):
        await engage(gql, pid, fans)
    await worker.drain()
    videos = await walk(gql, viewer, kind="VIDEO")
    assert "a clip" in videos and "a photo" not in videos and "just words" not in videos
    images = await walk(gql, viewer, kind="IMAGE")
    assert "a photo" in images and "a clip" not in images and "just words" not in images
    everything = await walk(gql, viewer)
    assert {"a clip", "a photo", "just words"} <= set(everything)
    # A cursor of one variant is refused by another.
    _, info = await page(gql, viewer, 1)
    out = await gql(
        EXPLORE, {"first": 2, "after": info["endCursor"], "kind": "VIDEO"}, token=viewer.token
    )
    assert out["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT", out


async def test_bad_arguments_and_anonymous_viewers_get_typed_errors(single_env):
    gql = single_env.gql
    (viewer, other) = await single_env.make_users(2, prefix="exa")
    out = await gql(EXPLORE, {"first": 3})
    assert out["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED", out
    assert out["data"] == {"explore": None}, out  # the root field alone is null
    for after in ("garbage", "eDE6YTpub3BlOjA", "ZjE6dzphYmM6MQ"):  # x1:a:nope:0, a feed's
        out = await gql(EXPLORE, {"first": 3, "after": after}, token=viewer.token)
        assert out["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT", (after, out)
    out = await gql(EXPLORE, {"first": 10_000}, token=viewer.token)
    assert out["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT", out
    # A window that is gone, or another viewer's: CURSOR_EXPIRED.
    author, fan = await single_env.make_users(2, prefix="exb")
    for caption in ("one", "two"):
        await engage(gql, await post(gql, author, f"expiry {caption}"), [fan])
    await single_env.worker.drain()
    _, info = await page(gql, viewer, 1)
    assert info["hasNextPage"]
    out = await gql(EXPLORE, {"first": 3, "after": info["endCursor"]}, token=other.token)
    assert out["errors"][0]["extensions"]["code"] == "CURSOR_EXPIRED", out


async def test_an_explore_page_costs_constant_statements(single_env):
    gql, worker, engine = single_env.gql, single_env.worker, single_env.engine
    viewer, *authors = await single_env.make_users(9, prefix="exq")
    fans = await single_env.make_users(2, prefix="exqf")
    for a in authors:
        for i in range(3):
            await engage(gql, await post(gql, a, f"{a.username}-{i}"), fans)
    await worker.drain()
    document = """query($n: Int!) { explore(first: $n) { edges { cursor node { id caption
      createdAt likeCount commentCount viewerHasLiked media { url kind }
      author { username displayName followerCount followingCount postCount
        followedByViewer blockedWithViewer } } } pageInfo { endCursor hasNextPage } } }"""
    warm = await gql(document, {"n": 1}, token=viewer.token)  # the session's first request
    assert "errors" not in warm, warm
    counts = {}
    for n in (5, 20):
        with sql_log(engine) as seen:
            out = await gql(document, {"n": n}, token=viewer.token)
        assert "errors" not in out, out
        assert len(out["data"]["explore"]["edges"]) == n
        counts[n] = len(seen["statements"])
        print(f"\nexplore(first: {n}): {counts[n]} statements:", seen["statements"])
        # The candidates' facts, the page's hydration; each alone, no BEGIN.
        assert counts[n] <= 2, seen["statements"]
        assert seen["begins"] == []
    assert counts[5] == counts[20]


async def test_the_trending_pool_is_bounded_and_windowed(single_env):
    """The pool keeps ``size`` posts, each hourly bucket ``bucket_cap``; counts older
    than the window leave the pool with their hour; a withdrawal takes one back."""
    config = ExploreConfig(namespace=f"trend-unit-{uuid.uuid4().hex[:8]}", size=5, bucket_cap=8)
    trending = RedisTrending(single_env.redis, config)
    now = dt.datetime(2026, 12, 1, 12, 30, tzinfo=dt.UTC)
    posts = [uuid.uuid4() for _ in range(7)]
    for i, p in enumerate(posts):
        for _ in range(i + 1):
            await trending.bump(p, "image", now, now)
    top = await trending.top("all", 100, now)
    assert top == [(p, i + 1) for i, p in enumerate(posts)][::-1][:5]
    # A full bucket: newcomers take the least engaged post's place, so a post that
    # keeps gaining engagement gets in and to the top.
    for _ in range(5):
        await trending.bump(uuid.uuid4(), "image", now, now)
    assert await single_env.redis.zcard(trending.keys("all", now)[2]) == 8
    assert await single_env.redis.zcard(trending.pool_key("all")) == 5
    rising = uuid.uuid4()
    for _ in range(10):
        await trending.bump(rising, "image", now, now)
    assert (await trending.top("all", 1, now))[0][0] == rising
    assert await trending.top("video", 10, now) == []
    clip = uuid.uuid4()
    for _ in range(20):
        await trending.bump(clip, "video", now, now)
    assert await trending.top("video", 10, now) == [(clip, 20)]
    await trending.withdraw(clip, now, now)
    assert (await trending.top("video", 10, now))[0] == (clip, 19)
    # An hour later the counts still stand; a day later they are gone.
    later = now + dt.timedelta(hours=1)
    await trending.bump(posts[0], "image", later, later)
    assert (await trending.top("all", 1, later))[0][0] == clip  # over-estimated: it took a place
    assert (await trending.top("video", 1, later))[0] == (clip, 19)
    day_later = now + dt.timedelta(hours=24)
    assert await trending.top("all", 10, day_later) == [(posts[0], 1)]
    assert await trending.top("video", 10, day_later) == []
    await trending.remove([posts[0]])
    assert await trending.top("all", 10, day_later) == []


TRENDING = """query($n: Int!) { trendingHashtags(first: $n) { name postCount engagementCount
  hashtag { name } } }"""


async def trending_tags(gql, user, n: int = 100) -> dict[str, tuple[int, int]]:
    out = await gql(TRENDING, {"n": n}, token=user.token)
    assert "errors" not in out, out
    return {
        t["name"]: (t["postCount"], t["engagementCount"]) for t in out["data"]["trendingHashtags"]
    }


async def test_trending_hashtags_keep_explores_exclusions_and_drop_at_once(single_env, settings):
    gql, worker, engine = single_env.gql, single_env.worker, single_env.engine
    viewer, a, b, blocked, banned, *fans = await single_env.make_users(8, prefix="exh")
    tag = f"t{uuid.uuid4().hex[:10]}"
    hot, warm, shy, deleted_tag, banned_tag = (f"{tag}{s}" for s in "hwsdb")
    p1 = await post(gql, a, f"one #{hot} #{warm}")
    p2 = await post(gql, b, f"two #{hot}")
    p3 = await post(gql, blocked, f"three #{shy}")
    p4 = await post(gql, a, f"four #{deleted_tag}")
    p5 = await post(gql, banned, f"five #{banned_tag}")
    await post(gql, b, f"never liked #{tag}q")
    await engage(gql, p1, fans, comments=1)  # 3 likes + 1 comment
    await engage(gql, p2, fans[:1])
    for pid in (p3, p4, p5):
        await engage(gql, pid, fans)
    await gql(BLOCK, {"id": viewer.gid}, token=blocked.token)  # blocked the other way
    await worker.drain()
    tags = {k: v for k, v in (await trending_tags(gql, viewer)).items() if k.startswith(tag)}
    assert tags == {hot: (2, 5), warm: (1, 4), deleted_tag: (1, 3), banned_tag: (1, 3)}, tags
    ordered = [k for k in await trending_tags(gql, viewer) if k.startswith(tag)]
    assert ordered.index(hot) < ordered.index(warm)
    # Gone at once: a post deleted, an author banned (no consumer has run).
    await worker.stop()
    try:
        assert (await gql(DELETE, {"id": p4}, token=a.token))["data"]["deletePost"][
            "__typename"
        ] == "DeletePostSuccess"
        assert await set_user_status(
            engine, banned.id, "banned", counter_shards=settings.counter_shards
        )
        tags = {k for k in await trending_tags(gql, viewer) if k.startswith(tag)}
        assert tags == {hot, warm}, tags
    finally:
        await worker.start()
    # Following a's author moves its tags behind: here still listed (the fallback).
    await gql(FOLLOW, {"id": a.gid}, token=viewer.token)
    assert {k for k in await trending_tags(gql, viewer) if k.startswith(tag)} == {hot, warm}
    out = await gql(TRENDING, {"n": 3})
    assert out["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED", out
    assert out["data"] == {"trendingHashtags": None}, out
    out = await gql(TRENDING, {"n": -1}, token=viewer.token)
    assert out["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT", out


TAGGED = """query($t: String!, $first: Int!, $after: String, $order: FeedOrder!) {
  hashtag(name: $t) { posts(first: $first, after: $after, order: $order) {
    edges { cursor node { caption } } pageInfo { hasNextPage endCursor } } } }"""


async def tagged(gql, user, tag: str, first: int, after=None, order="RANKED"):
    out = await gql(
        TAGGED,
        {"t": tag, "first": first, "after": after, "order": order},
        token=user.token if user else None,
    )
    return out


async def walk_tag(gql, user, tag: str, first: int = 2, order="RANKED") -> list[str]:
    seen, after = [], None
    while True:
        out = await tagged(gql, user, tag, first, after, order)
        assert "errors" not in out, out
        posts = out["data"]["hashtag"]["posts"]
        seen += [e["node"]["caption"] for e in posts["edges"]]
        if not posts["pageInfo"]["hasNextPage"]:
            return seen
        after = posts["pageInfo"]["endCursor"]


async def test_a_hashtags_posts_ranked_like_explore(single_env):
    gql, worker = single_env.gql, single_env.worker
    viewer, a, b, blocked, *fans = await single_env.make_users(7, prefix="exr")
    tag = f"r{uuid.uuid4().hex[:10]}"
    liked = await post(gql, a, f"older, liked #{tag}")
    newer = await post(gql, b, f"newer #{tag}")
    await post(gql, blocked, f"blocked's #{tag}")
    await post(gql, b, f"newest #{tag}")
    await engage(gql, liked, fans, comments=2)
    await gql(BLOCK, {"id": blocked.gid}, token=viewer.token)
    await worker.drain()
    assert await walk_tag(gql, viewer, tag, order="RECENT") == [
        f"newest #{tag}",
        f"newer #{tag}",
        f"older, liked #{tag}",
    ]
    ranked = await walk_tag(gql, viewer, tag, first=1)
    assert ranked == [f"older, liked #{tag}", f"newest #{tag}", f"newer #{tag}"], ranked
    # Frozen while scores move: "newer" gains engagement between pages.
    first = await tagged(gql, viewer, tag, 1)
    await engage(gql, newer, fans, comments=3)
    await worker.drain()
    assert (await walk_tag(gql, viewer, tag, first=1))[0] == f"newer #{tag}"  # a new walk
    rest, after = [], first["data"]["hashtag"]["posts"]["pageInfo"]["endCursor"]
    while after:
        out = await tagged(gql, viewer, tag, 1, after)
        assert "errors" not in out, out
        posts = out["data"]["hashtag"]["posts"]
        rest += [e["node"]["caption"] for e in posts["edges"]]
        after = posts["pageInfo"]["endCursor"] if posts["pageInfo"]["hasNextPage"] else None
    assert rest == [f"newest #{tag}", f"newer #{tag}"]
    # Anonymous: RECENT works, RANKED needs a viewer; another tag's cursor is refused.
    assert (
        len((await tagged(gql, None, tag, 5, order="RECENT"))["data"]["hashtag"]["posts"]["edges"])
        == 4
    )
    out = await tagged(gql, None, tag, 5)
    assert out["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED", out
    cursor = first["data"]["hashtag"]["posts"]["edges"][0]["cursor"]
    out = await tagged(gql, viewer, tag + "x", 5, cursor)
    assert out["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT", out


async def test_a_hashtags_ranked_walk_goes_on_newest_first_past_its_window(single_env):
    """With a window of 3, the 3 newest posts are ranked, then the rest follow newest
    first from the window's oldest, with no post twice or missing."""
    gql, worker = single_env.gql, single_env.worker
    viewer, author, fan = await single_env.make_users(3, prefix="exw")
    tag = f"w{uuid.uuid4().hex[:10]}"
    ids = [await post(gql, author, f"p{i} #{tag}") for i in range(7)]
    await engage(gql, ids[4], [fan])  # in the window (p4, p5, p6), liked: first
    await worker.drain()
    config = FeedConfig(explore=ExploreConfig(window=3))
    by_id = {decode_global_id(g, "Post", "id"): i for i, g in enumerate(ids)}

    async def every(entries):
        return [True] * len(entries)

    seen, after = [], None
    while True:
        page = await read_ranked_hashtag(
            single_env.engine,
            single_env.stores,
            config,
            viewer.id,
            tag,
            first=2,
            after=after,
            visible=every,
            now=utcnow(),
        )
        seen += [by_id[e.post_id] for e, _ in page.items]
        if not page.has_next:
            break
        after = page.items[-1][1]
    assert seen[0] == 4 and sorted(seen[:3]) == [4, 5, 6], seen
    assert seen[3:] == [3, 2, 1, 0], seen
