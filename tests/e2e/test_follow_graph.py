"""The follow graph over GraphQL: follow/unfollow/block semantics, lists, counts, flags."""

from __future__ import annotations

from sqlalchemy import text

from tests.support.actions import counts
from tests.support.documents import BLOCK, COUNTS, FOLLOW, UNBLOCK, UNFOLLOW


async def test_follow_is_idempotent_and_sets_flags(gql, make_users):
    a, b = await make_users(2)
    first = (await gql(FOLLOW, {"id": b.gid}, token=a.token))["data"]["follow"]
    assert first["__typename"] == "FollowSuccess"
    assert first["user"] == {
        "username": b.username,
        "followerCount": 1,
        "followedByViewer": True,
        "followsViewer": False,
    }
    again = (await gql(FOLLOW, {"id": b.gid}, token=a.token))["data"]["follow"]
    assert again["user"]["followerCount"] == 1
    assert await counts(gql, a) == (0, 1)
    # b sees that a follows them
    back = await gql(
        "query($id: ID!) { node(id: $id) { ... on User { followsViewer followedByViewer } } }",
        {"id": a.gid},
        token=b.token,
    )
    assert back["data"]["node"] == {"followsViewer": True, "followedByViewer": False}


async def test_unfollow_soft_deletes_and_refollow_inserts_new_row(gql, make_users, engine):
    a, b = await make_users(2)
    await gql(FOLLOW, {"id": b.gid}, token=a.token)
    out = (await gql(UNFOLLOW, {"id": b.gid}, token=a.token))["data"]["unfollow"]
    assert out["user"] == {"followerCount": 0, "followedByViewer": False}
    again = (await gql(UNFOLLOW, {"id": b.gid}, token=a.token))["data"]["unfollow"]
    assert again["user"]["followerCount"] == 0
    await gql(FOLLOW, {"id": b.gid}, token=a.token)
    async with engine.connect() as conn:
        rows = (
            (
                await conn.execute(
                    text(
                        "SELECT deleted_at IS NULL AS live FROM follows"
                        " WHERE follower_id = :a AND followee_id = :b ORDER BY created_at"
                    ),
                    {"a": a.id, "b": b.id},
                )
            )
            .scalars()
            .all()
        )
    assert rows == [False, True]  # the first cycle is kept, ended; the re-follow is live
    assert await counts(gql, b) == (1, 0)


async def test_block_ends_follows_both_ways_and_refuses_new_ones(gql, make_users):
    a, b = await make_users(2)
    await gql(FOLLOW, {"id": b.gid}, token=a.token)
    await gql(FOLLOW, {"id": a.gid}, token=b.token)
    assert await counts(gql, a) == (1, 1)
    blocked = (await gql(BLOCK, {"id": b.gid}, token=a.token))["data"]["block"]
    assert blocked["user"]["blockedWithViewer"] is True
    assert await counts(gql, a) == (0, 0)
    assert await counts(gql, b) == (0, 0)
    for actor, target in ((a, b), (b, a)):
        refused = (await gql(FOLLOW, {"id": target.gid}, token=actor.token))["data"]["follow"]
        assert refused["__typename"] == "BlockedError" and refused["code"] == "BLOCKED"
    assert await counts(gql, b) == (0, 0)
    lifted = (await gql(UNBLOCK, {"id": b.gid}, token=a.token))["data"]["unblock"]
    assert lifted["user"]["blockedWithViewer"] is False
    assert await counts(gql, a) == (0, 0)  # ended follows stay ended
    ok = (await gql(FOLLOW, {"id": b.gid}, token=a.token))["data"]["follow"]
    assert ok["__typename"] == "FollowSuccess"


async def test_cannot_follow_banned_or_deleted(gql, make_users, engine):
    a, banned, deleted = await make_users(3)
    async with engine.begin() as conn:
        await conn.execute(text("UPDATE users SET status='banned' WHERE id=:i"), {"i": banned.id})
        await conn.execute(text("UPDATE users SET status='deleted' WHERE id=:i"), {"i": deleted.id})
    for target in (banned, deleted):
        out = (await gql(FOLLOW, {"id": target.gid}, token=a.token))["data"]["follow"]
        assert out["__typename"] == "UserUnavailableError"
    assert await counts(gql, a) == (0, 0)
    assert (await gql(COUNTS, {"u": banned.username}))["data"]["user"] is None


async def test_follower_lists_keyset_paginate_newest_first(gql, make_users):
    (star,) = await make_users(1)
    fans = await make_users(7)
    for fan in fans:
        await gql(FOLLOW, {"id": star.gid}, token=fan.token)
    q = """query($u: String!, $after: String) { user(username: $u) {
        followers(first: 3, after: $after) { totalCount
          edges { cursor node { username } } pageInfo { hasNextPage endCursor } } } }"""
    seen, after = [], None
    while True:
        page = (await gql(q, {"u": star.username, "after": after}))["data"]["user"]["followers"]
        assert page["totalCount"] == 7
        seen += [e["node"]["username"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == [f.username for f in reversed(fans)]
    following = await gql(
        "query($u: String!) { user(username: $u) {"
        " following { totalCount edges { node { username } } } } }",
        {"u": fans[0].username},
    )
    assert following["data"]["user"]["following"]["edges"] == [
        {"node": {"username": star.username}}
    ]
