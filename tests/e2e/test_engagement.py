"""Likes, comments and hashtags over GraphQL, against real PostgreSQL."""

from __future__ import annotations

import asyncio
import random

from sqlalchemy import text

from tests.support.actions import post
from tests.support.documents import BLOCK, COMMENT, LIKE, UNLIKE

DELETE_COMMENT = """mutation($id: ID!) { deleteComment(input: { commentId: $id }) { __typename
  ... on DeleteCommentSuccess { deletedCount post { commentCount } } ... on Error { code } } }"""
POST = """query($id: ID!) { node(id: $id) { ... on Post { likeCount commentCount viewerHasLiked
  likes(first: 10) { totalCount edges { node { username } } }
  comments(first: 10) { totalCount edges { node { body author { username }
    replies(first: 5) { totalCount edges { node { body } } pageInfo { hasNextPage } } } } } } } }"""


async def likes_in_db(engine, post_gid) -> int:
    from schema.ids import decode_global_id

    async with engine.connect() as conn:
        return await conn.scalar(
            text("SELECT count(*) FROM likes WHERE post_id = :p"),
            {"p": decode_global_id(post_gid, "Post", "id")},
        )


async def test_like_is_idempotent_and_lists_likers(gql, make_users):
    author, fan = await make_users(2)
    pid = await post(gql, author, "like me")
    for _ in range(2):
        out = (await gql(LIKE, {"id": pid}, token=fan.token))["data"]["likePost"]
        assert out["post"] == {"likeCount": 1, "viewerHasLiked": True}
    seen = (await gql(POST, {"id": pid}, token=fan.token))["data"]["node"]
    assert seen["likes"] == {"totalCount": 1, "edges": [{"node": {"username": fan.username}}]}
    out = (await gql(UNLIKE, {"id": pid}, token=fan.token))["data"]["unlikePost"]
    assert out["post"] == {"likeCount": 0, "viewerHasLiked": False}
    again = (await gql(UNLIKE, {"id": pid}, token=fan.token))["data"]["unlikePost"]
    assert again["post"]["likeCount"] == 0  # a second unlike subtracts nothing


async def test_burst_of_concurrent_like_unlike_keeps_count_equal_to_rows(gql, make_users, engine):
    (author,) = await make_users(1)
    fans = await make_users(40)
    pid = await post(gql, author, "hot post")
    rng = random.Random(7)
    ops = []
    for f in fans:  # each fan fires a random burst of likes and unlikes at once
        for _ in range(rng.randint(1, 5)):
            ops.append(gql(rng.choice([LIKE, UNLIKE]), {"id": pid}, token=f.token))
    rng.shuffle(ops)
    results = await asyncio.gather(*ops)
    assert all("errors" not in r for r in results)
    rows = await likes_in_db(engine, pid)
    count = (await gql(POST, {"id": pid}, token=author.token))["data"]["node"]["likeCount"]
    assert count == rows
    # and then everyone unlikes twice, concurrently: exactly zero, never negative
    await asyncio.gather(*(gql(UNLIKE, {"id": pid}, token=f.token) for f in fans for _ in "ab"))
    assert (await gql(POST, {"id": pid}, token=author.token))["data"]["node"]["likeCount"] == 0
    assert await likes_in_db(engine, pid) == 0


async def test_comments_with_one_level_of_replies_and_moderation(gql, make_users):
    author, alice, bob = await make_users(3)
    pid = await post(gql, author, "discuss")
    c1 = (await gql(COMMENT, {"id": pid, "body": "first!"}, token=alice.token))["data"]
    c1 = c1["addComment"]["comment"]["id"]
    r1 = await gql(COMMENT, {"id": pid, "body": "reply", "parent": c1}, token=bob.token)
    r1 = r1["data"]["addComment"]["comment"]["id"]
    deep = await gql(COMMENT, {"id": pid, "body": "deeper", "parent": r1}, token=alice.token)
    assert deep["data"]["addComment"] == {
        "__typename": "ValidationError",
        "code": "VALIDATION_FAILED",
        "message": deep["data"]["addComment"]["message"],
        "field": "parentId",
    }
    await gql(COMMENT, {"id": pid, "body": "second"}, token=bob.token)
    for bad in ("", "   ", "x" * 2201, "nul\x00"):
        out = (await gql(COMMENT, {"id": pid, "body": bad}, token=bob.token))["data"]
        assert out["addComment"]["__typename"] == "ValidationError", bad
    node = (await gql(POST, {"id": pid}, token=alice.token))["data"]["node"]
    assert node["commentCount"] == 3
    assert node["comments"]["totalCount"] == 3  # replies included: commentCount
    assert [e["node"]["body"] for e in node["comments"]["edges"]] == ["first!", "second"]
    replies = node["comments"]["edges"][0]["node"]["replies"]
    assert [e["node"]["body"] for e in replies["edges"]] == ["reply"]
    assert replies["totalCount"] is None  # no counter of replies: not O(1)
    # bob may not delete alice's comment; the post's author may, replies go with it
    denied = (await gql(DELETE_COMMENT, {"id": c1}, token=bob.token))["data"]["deleteComment"]
    assert denied["__typename"] == "NotCommentModeratorError"
    done = (await gql(DELETE_COMMENT, {"id": c1}, token=author.token))["data"]["deleteComment"]
    # the payload's post carries the count after the deletion, for the client to refresh
    assert done == {
        "__typename": "DeleteCommentSuccess",
        "deletedCount": 2,
        "post": {"commentCount": 1},
    }
    again = (await gql(DELETE_COMMENT, {"id": c1}, token=author.token))["data"]["deleteComment"]
    assert again["deletedCount"] == 0 and again["post"] == {"commentCount": 1}
    node = (await gql(POST, {"id": pid}, token=alice.token))["data"]["node"]
    assert node["commentCount"] == 1


async def test_no_likes_or_comments_across_a_block(gql, make_users):
    author, troll = await make_users(2)
    pid = await post(gql, author, "mine")
    await gql(BLOCK, {"id": troll.gid}, token=author.token)
    assert (await gql(LIKE, {"id": pid}, token=troll.token))["data"]["likePost"]["code"] == (
        "NOT_FOUND"
    )
    out = (await gql(COMMENT, {"id": pid, "body": "hi"}, token=troll.token))["data"]
    assert out["addComment"]["code"] == "NOT_FOUND"


async def test_hashtag_pages_fold_case_and_skip_urls(gql, make_users):
    (author,) = await make_users(1)
    await post(gql, author, "Morning #Café run https://ex.com/a#notatag")
    await post(gql, author, "evening #CAFÉ #run")
    q = """query($n: String!) { hashtag(name: $n) { name posts(first: 10) {
        edges { node { caption } } } } }"""
    cafe = (await gql(q, {"n": "café"}))["data"]["hashtag"]
    assert cafe["name"] == "café"
    assert [e["node"]["caption"] for e in cafe["posts"]["edges"]] == [
        "evening #CAFÉ #run",
        "Morning #Café run https://ex.com/a#notatag",
    ]
    assert (await gql(q, {"n": "notatag"}))["data"]["hashtag"]["posts"]["edges"] == []
    assert (await gql(q, {"n": "#RUN"}))["data"]["hashtag"]["name"] == "run"
    # A name that is not one tag finds nothing (it once looked up its first word).
    for name in ("café run", "run.", "#", "", "x" * 51):
        assert (await gql(q, {"n": name}))["data"]["hashtag"] is None, name


async def test_replies_page_past_the_preview(gql, make_users):
    author, alice = await make_users(2)
    pid = await post(gql, author, "thread")
    top = (await gql(COMMENT, {"id": pid, "body": "top"}, token=alice.token))["data"]
    top = top["addComment"]["comment"]["id"]
    for i in range(5):
        await gql(COMMENT, {"id": pid, "body": f"r{i}", "parent": top}, token=author.token)
    q = """query($id: ID!, $after: String) { node(id: $id) { ... on Comment {
        replies(first: 2, after: $after) { edges { node { body } }
          pageInfo { hasNextPage endCursor } } } } }"""
    seen, after = [], None
    while True:
        page = (await gql(q, {"id": top, "after": after}, token=alice.token))["data"]["node"]
        seen += [e["node"]["body"] for e in page["replies"]["edges"]]
        if not page["replies"]["pageInfo"]["hasNextPage"]:
            break
        after = page["replies"]["pageInfo"]["endCursor"]
    assert seen == [f"r{i}" for i in range(5)]


async def test_a_persian_hashtag_with_a_zwnj_is_found_whole(gql, make_users):
    (me,) = await make_users(1)
    word = "نرم\u200cافزار"  # "software"
    out = await gql(
        """mutation($c: String!) { createPost(input: { caption: $c }) {
          ... on CreatePostSuccess { post { id } } } }""",
        {"c": f"#{word} آزاد"},
        token=me.token,
    )
    gid = out["data"]["createPost"]["post"]["id"]
    found = await gql(
        "query($n: String!) { hashtag(name: $n) { name"
        " posts(first: 5) { edges { node { id } } } } }",
        {"n": word},
    )
    assert found["data"]["hashtag"]["name"] == word
    assert [e["node"]["id"] for e in found["data"]["hashtag"]["posts"]["edges"]] == [gid]
