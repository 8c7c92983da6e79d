"""A home-feed page is hydrated in one statement (domain.feed.hydration): the page costs
two SQL statements with no transaction, and every hydrated field says what the
per-field dataloaders say for the same viewer, blocks and likes included."""

from __future__ import annotations

from tests.support.actions import follow_all, post
from tests.support.checks import sql_log
from tests.support.documents import BLOCK, COMMENT, LIKE

#: The selection of the benchmark (bench.feed_vs_postgraphile), and more: every field a
#: hydration may load, the author's counts through a fragment.
FEED = """query($n: Int!) { viewer { feed(first: $n) {
  edges { cursor node { id caption createdAt media { url kind } likeCount commentCount
    viewerHasLiked
    author { username displayName ...Counts followedByViewer blockedWithViewer } } }
  pageInfo { endCursor hasNextPage } } } }
fragment Counts on User { followerCount followingCount postCount }"""
BACKWARD = FEED.replace("$n: Int!", "$n: Int!, $b: String").replace(
    "feed(first: $n)", "feed(last: $n, before: $b)"
)
NODE = """query($id: ID!) { node(id: $id) { ... on Post { id caption createdAt media { url kind }
  likeCount
  commentCount viewerHasLiked author { username displayName followerCount followingCount
  postCount followedByViewer blockedWithViewer } } } }"""


async def test_a_feed_page_is_two_statements_without_transactions(gql, make_users, worker, engine):
    reader, *authors = await make_users(6, prefix="hyd")
    for a in authors:
        await follow_all(gql, [reader], a)
    for i in range(5):
        for a in authors:
            await post(gql, a, f"{a.username}-{i}")
    await worker.drain()
    warm = await gql(FEED, {"n": 20}, token=reader.token)  # builds the cached feed
    assert "errors" not in warm, warm
    for n in (5, 20):
        with sql_log(engine) as seen:
            out = await gql(FEED, {"n": n}, token=reader.token)
        assert "errors" not in out, out
        assert len(out["data"]["viewer"]["feed"]["edges"]) == n
        print(f"\nfeed(first: {n}): {len(seen['statements'])} statements:", seen["statements"])
        # The viewer with the followed pull authors, the hydration; each alone, no BEGIN.
        assert len(seen["statements"]) <= 2, seen["statements"]
        assert seen["begins"] == [], len(seen["begins"])
    # Backward (``last``/``before``) the same, from the end of the feed or a cursor.
    (cursor,) = [e["cursor"] for e in out["data"]["viewer"]["feed"]["edges"]][-1:]
    for n, before in ((5, None), (20, None), (5, cursor), (9, cursor)):
        with sql_log(engine) as seen:
            back = await gql(BACKWARD, {"n": n, "b": before}, token=reader.token)
        assert "errors" not in back, back
        assert len(back["data"]["viewer"]["feed"]["edges"]) == n
        assert len(seen["statements"]) <= 2, (n, before, seen["statements"])
        assert seen["begins"] == [], len(seen["begins"])


async def test_hydrated_fields_agree_with_the_dataloaders(gql, make_users, worker):
    viewer, author, other, troll, fan = await make_users(5, prefix="hya")
    await follow_all(gql, [viewer], author)
    await follow_all(gql, [viewer], other)
    await follow_all(gql, [troll, fan], author)  # author: 3 followers, 1 hidden below
    await follow_all(gql, [author], other)
    p1 = await post(gql, author, "one")
    p2 = await post(gql, other, "two")
    with_media = await gql(
        """mutation { createPost(input: { caption: "three", media: [
          { url: "https://example.com/a.jpg", kind: IMAGE },
          { url: "https://example.com/b.mp4", kind: VIDEO }] }) {
          ... on CreatePostSuccess { post { id } } } }""",
        token=other.token,
    )
    p3 = with_media["data"]["createPost"]["post"]["id"]
    for who in (viewer, troll, fan):
        await gql(LIKE, {"id": p1}, token=who.token)
    for who in (troll, fan):
        out = await gql(COMMENT, {"id": p1, "body": "hi"}, token=who.token)
        assert out["data"]["addComment"]["__typename"] == "AddCommentSuccess", out
    await gql(BLOCK, {"id": troll.gid}, token=viewer.token)  # hides the troll's share
    await worker.drain()

    out = await gql(FEED, {"n": 10}, token=viewer.token)
    assert "errors" not in out, out
    nodes = {e["node"]["id"]: e["node"] for e in out["data"]["viewer"]["feed"]["edges"]}
    assert set(nodes) == {p1, p2, p3}
    assert nodes[p2]["media"] == []
    assert [m["kind"] for m in nodes[p3]["media"]] == ["IMAGE", "VIDEO"]
    one = nodes[p1]
    assert (one["likeCount"], one["commentCount"], one["viewerHasLiked"]) == (2, 1, True)
    assert one["author"]["followerCount"] == 2  # viewer and fan: the troll is blocked
    assert one["author"]["followingCount"] == 1
    assert one["author"]["postCount"] == 1
    assert one["author"]["followedByViewer"] is True
    assert one["author"]["blockedWithViewer"] is False
    assert nodes[p2]["viewerHasLiked"] is False
    assert nodes[p2]["author"]["followerCount"] == 2  # viewer and author
    assert nodes[p2]["author"]["postCount"] == 2
    for pid, node in nodes.items():
        alone = (await gql(NODE, {"id": pid}, token=viewer.token))["data"]["node"]
        assert node == {**alone, "author": {**alone["author"]}}, (node, alone)
