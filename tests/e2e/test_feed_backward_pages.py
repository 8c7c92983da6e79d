"""``last``/``before`` on the home feed (docs/api/clients.md "Paging"): a backward walk
gives the forward walk's entries, page by page, across the cached window's end (the
feed's and a pull author's store's, FEED_MAX_LEN=20) with the pull author merged and
what the viewer may not see left out exactly as forward; ``hasPreviousPage`` exact;
arguments that mix both ways and cursors of another list are BAD_USER_INPUT."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from domain.feed.timelines import SENTINEL, sentinel_parts
from tests.support.actions import follow_all, post
from tests.support.checks import stores_for
from tests.support.documents import FOLLOW
from tests.support.feeds import small_feeds

PAGE = """query($f: Int, $a: String, $l: Int, $b: String, $o: FeedOrder) { viewer {
  feed(first: $f, after: $a, last: $l, before: $b, order: $o) {
  edges { cursor node { caption } }
  pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } }"""
MUTE = "mutation($id: ID!) { mute(input: { userId: $id }) { __typename } }"
DELETE = """mutation($id: ID!) { deletePost(input: { postId: $id }) { __typename } }"""


async def page(gql, user, **variables) -> dict:
    out = await gql(PAGE, variables, token=user.token)
    assert "errors" not in out, out
    return out["data"]["viewer"]["feed"]


def captions(feed: dict) -> list[str]:
    return [e["node"]["caption"] for e in feed["edges"]]


async def walk_forward(gql, user, size: int) -> list[dict]:
    edges, after = [], None
    while True:
        feed = await page(gql, user, f=size, a=after)
        edges += feed["edges"]
        assert feed["pageInfo"]["hasPreviousPage"] is (after is not None)
        if not feed["pageInfo"]["hasNextPage"]:
            return edges
        after = feed["pageInfo"]["endCursor"]


async def walk_backward(gql, user, size: int) -> list[dict]:
    """From the end to the top, ``size`` at a time; each page newest first, checked."""
    pages, before = [], None
    while True:
        feed = await page(gql, user, l=size, b=before)
        edges, info = feed["edges"], feed["pageInfo"]
        assert 0 < len(edges) <= size, feed
        assert info["hasNextPage"] is (before is not None)
        assert (info["startCursor"], info["endCursor"]) == (
            edges[0]["cursor"],
            edges[-1]["cursor"],
        )
        if info["hasPreviousPage"]:
            assert len(edges) == size, feed
        pages.insert(0, edges)
        if not info["hasPreviousPage"]:
            return [e for p in pages for e in p]
        before = info["startCursor"]


async def window_of(settings, user) -> tuple[int, bool]:
    """(entries, whole) of the user's cached feed in Redis."""
    redis, stores = stores_for(settings)
    try:
        key = stores.feeds.key(user.id)
        client = stores.feeds.redis
        count = await client.zcard(key)
        sentinel = await client.zscore(key, SENTINEL)
        assert sentinel is not None, key
        return count - 1, sentinel_parts(sentinel)[1]
    finally:
        await redis.aclose()


async def test_backward_walks_cross_the_window_with_a_pull_author(
    make_users, worker, settings, engine
):
    """FEED_MAX_LEN=20, pull at >= 3 followers: P (pull) posts 30, A, B (push), M (muted)
    and V (the viewer) post between; two of A's posts are deleted, one inside the
    cached window and one past it. Every backward walk (sizes 1 to 50) gives the
    forward walks' 57 posts, newest first; so does every page before a cursor."""
    async with small_feeds(settings, engine, worker, pull_threshold=3, push_back_threshold=2) as (
        gql,
        control,
    ):
        v, a, b, p, m, f1, f2 = await make_users(7, prefix="fb")
        await follow_all(gql, [v, f1, f2], p)
        for author in (a, b, m):
            await follow_all(gql, [v], author)
        assert "errors" not in await gql(MUTE, {"id": m.gid}, token=v.token)
        await control.drain()
        assert await page(gql, v, f=5) == {
            "edges": [],
            "pageInfo": {
                "hasNextPage": False,
                "hasPreviousPage": False,
                "startCursor": None,
                "endCursor": None,
            },
        }  # V's cached feed exists (whole, empty) before the posts
        expected, gids = [], {}
        for i in range(1, 31):
            for who, name, every in (
                (p, "p", 1),
                (a, "a", 2),
                (b, "b", 3),
                (m, "m", 5),
                (v, "v", 7),
            ):
                if i % every == 0:
                    caption = f"{name}{i:02}"
                    gids[caption] = await post(gql, who, caption)
                    expected.append(caption)
        await control.drain()
        async with engine.connect() as conn:
            mode = await conn.scalar(
                text("SELECT mode FROM author_feed_modes WHERE author_id = :a"), {"a": p.id}
            )
        assert mode == "pull"
        for caption in ("a30", "a04"):  # the newest cached entry; one past the window
            out = await gql(DELETE, {"id": gids[caption]}, token=a.token)
            assert out["data"]["deletePost"]["__typename"] == "DeletePostSuccess", out
            expected.remove(caption)
        await control.drain()
        newest_first = expected[::-1]
        expected = [c for c in newest_first if not c.startswith("m")]
        assert len(expected) == 57
        # V's cached feed: a window of the newest 20 of A, B, M and V (P's are not in
        # it), a30 deleted since; past it, PostgreSQL.
        cached = [c for c in gids if c[0] in "abmv"][::-1][:20]
        assert "a30" in cached and "a04" not in cached
        assert await window_of(settings, v) == (19, False)
        # the first post the walk reads past the window (from PostgreSQL)
        past = next(i for i, c in enumerate(expected) if c[0] != "p" and c not in cached)
        assert past > 20

        forward = await walk_forward(gql, v, 7)
        assert [e["node"]["caption"] for e in forward] == expected
        assert await walk_forward(gql, v, 20) == forward
        for size in (1, 3, 7, 20, 50):
            assert await walk_backward(gql, v, size) == forward, size
        assert await window_of(settings, v) == (19, False)  # read, never rebuilt

        cursors = [e["cursor"] for e in forward]
        for k in (1, 2, 3, 4, past - 1, past, past + 1, past + 2, 56):
            before = await page(gql, v, l=3, b=cursors[k])
            assert [e["cursor"] for e in before["edges"]] == cursors[max(0, k - 3) : k], k
            assert before["pageInfo"]["hasPreviousPage"] is (k > 3), k
            assert before["pageInfo"]["hasNextPage"] is True
        end = await page(gql, v, l=2)
        assert captions(end) == expected[-2:]
        assert end["pageInfo"]["hasPreviousPage"] is True
        assert end["pageInfo"]["hasNextPage"] is False
        assert captions(await page(gql, v, f=2, b=cursors[10])) == expected[8:10]
        assert captions(await page(gql, v, l=0, b=cursors[10])) == []

        # unmuting M brings its posts back in both directions, the window unchanged
        unmute = "mutation($id: ID!) { unmute(input: { userId: $id }) { __typename } }"
        assert "errors" not in await gql(unmute, {"id": m.gid}, token=v.token)
        with_m = await walk_forward(gql, v, 9)
        assert len(with_m) == 63
        assert await walk_backward(gql, v, 9) == with_m


async def test_the_backward_feed_from_postgres_when_redis_fails_is_the_same(
    gql, make_users, worker, monkeypatch
):
    """Redis failing mid-walk: the pages come from PostgreSQL, in the same order and
    with the same cursors."""
    from domain.errors import StoreError
    from domain.feed import read_feed

    v, a, b = await make_users(3, prefix="fr")
    await follow_all(gql, [v], a)
    await follow_all(gql, [v], b)
    for i in range(6):
        await post(gql, a, f"a{i}")
        await post(gql, b, f"b{i}")
    await worker.drain()
    cached = await walk_backward(gql, v, 5)
    assert [e["node"]["caption"] for e in cached][:2] == ["b5", "a5"]

    class Down:
        def __init__(self, *args, **kwargs) -> None:
            raise StoreError("down")

    monkeypatch.setattr(read_feed, "_RedisSource", Down)
    assert await walk_backward(gql, v, 5) == cached
    assert await walk_backward(gql, v, 2) == cached


async def test_bad_backward_feed_arguments_are_bad_user_input(gql, make_users, settings):
    v, w, a = await make_users(3, prefix="fx")
    for reader in (v, w):
        assert "errors" not in await gql(FOLLOW, {"id": a.gid}, token=reader.token)
    for i in range(3):
        await post(gql, a, f"x{i}")
    mine = (await page(gql, v, f=3))["edges"]
    theirs = (await page(gql, w, f=3))["edges"]
    assert len(mine) == len(theirs) == 3
    ranked = (await page(gql, v, f=3, o="RANKED"))["edges"]
    posts = "query($u: String!) { user(username: $u) { posts(first: 1) { edges { cursor } } } }"
    out = await gql(posts, {"u": a.username}, token=v.token)
    of_posts = out["data"]["user"]["posts"]["edges"][0]["cursor"]
    cursor = mine[1]["cursor"]
    for variables in (
        {"a": cursor, "b": cursor},
        {"a": cursor, "l": 2},
        {"l": settings.max_page_size + 1},
        {"l": -1},
        {"b": theirs[1]["cursor"]},  # another viewer's feed
        {"b": of_posts},  # the author's posts
        {"b": ranked[1]["cursor"]},  # the ranked order's
        {"b": "not a cursor"},
    ):
        out = await gql(PAGE, variables, token=v.token)
        codes = [e["extensions"]["code"] for e in out.get("errors") or ()]
        assert codes == ["BAD_USER_INPUT"], (variables, out)


@pytest.mark.parametrize("size", [1, 2])
async def test_a_backward_page_of_a_short_feed(gql, make_users, size):
    """A feed shorter than a page: the backward page is all of it, nothing before."""
    v, a = await make_users(2, prefix="fs")
    assert "errors" not in await gql(FOLLOW, {"id": a.gid}, token=v.token)
    await post(gql, a, "only")
    await post(gql, v, "mine")
    feed = await page(gql, v, l=5)
    assert captions(feed) == ["mine", "only"]
    assert feed["pageInfo"]["hasPreviousPage"] is False
    feed = await page(gql, v, l=size, b=feed["edges"][-1]["cursor"])
    assert captions(feed) == ["mine"]
    assert feed["pageInfo"]["hasPreviousPage"] is False
