"""Private accounts over GraphQL (docs/seeds/chroma-architecture.md "Private accounts"): follow
requests, approval and rejection, what a non-follower sees, switching to public, blocks."""

from __future__ import annotations

import json

from sqlalchemy import text

from domain.moderation.set_user_status import set_user_status
from tests.support.actions import counts, feed_captions, make_private, ok
from tests.support.checks import measured, no_follow_count_drift, pending_requests
from tests.support.documents import (
    APPROVE,
    BLOCK,
    CREATE,
    FOLLOW_OR_REQUEST,
    REJECT,
    SET_PRIVATE,
    UNFOLLOW,
)

REQUESTS = """query($first: Int!, $after: String) { viewer { followRequests(first: $first,
  after: $after) { edges { cursor requestedAt node { username } }
  pageInfo { hasNextPage endCursor } } } }"""
PAGE_INFO = "pageInfo { hasNextPage hasPreviousPage endCursor } restricted"
PROFILE = f"""query($u: String!) {{ user(username: $u) {{
  username displayName bio isPrivate followerCount followingCount postCount
  followedByViewer followRequestedByViewer
  posts(first: 10) {{ totalCount edges {{ node {{ caption }} }} {PAGE_INFO} }}
  followers(first: 10) {{ totalCount edges {{ node {{ username }} }} {PAGE_INFO} }}
  following(first: 10) {{ totalCount edges {{ node {{ username }} }} {PAGE_INFO} }} }} }}"""


def closed(total: int, why: str) -> dict:
    """A list closed to the viewer: no edges, nothing to page, and why."""
    return {
        "totalCount": total,
        "edges": [],
        "pageInfo": {"hasNextPage": False, "hasPreviousPage": False, "endCursor": None},
        "restricted": why,
    }


NODE = """query($id: ID!) { node(id: $id) { id ... on Post { caption } } }"""
NODES = """query($ids: [ID!]!) { nodes(ids: $ids) { id } }"""
HASHTAG = """query($n: String!) { hashtag(name: $n) { posts { edges { node { caption } } } } }"""


async def post(gql, author, caption: str) -> str:
    out = await ok(gql, CREATE, {"c": caption}, author, "CreatePostSuccess")
    return out["post"]["id"]


async def events(engine, topic: str, **payload: str) -> list[dict]:
    """Outbox payloads of ``topic`` whose payload contains ``payload``."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT payload FROM outbox WHERE topic = :t AND payload @> CAST(:p AS jsonb)"
                " ORDER BY id"
            ),
            {"t": topic, "p": json.dumps(payload)},
        )
        return [r[0] for r in rows]


async def test_following_a_private_account_sends_one_request(gql, make_users, engine):
    owner, fan = await make_users(2, prefix="priv")
    await make_private(gql, owner)
    for _ in range(3):  # idempotent: one request, one event
        out = await ok(gql, FOLLOW_OR_REQUEST, {"id": owner.gid}, fan, "FollowRequestedSuccess")
        assert out["user"] == {
            "isPrivate": True,
            "followerCount": 0,
            "followedByViewer": False,
            "followRequestedByViewer": True,
        }
    assert await pending_requests(engine, owner) == [fan.id]
    assert await events(engine, "follow_request.created", target_id=str(owner.id)) == [
        {"requester_id": str(fan.id), "target_id": str(owner.id)}
    ]
    assert await counts(gql, owner) == (0, 0)
    assert await counts(gql, fan) == (0, 0)


async def test_non_follower_sees_the_profile_but_not_posts_or_lists(gql, make_users):
    owner, friend, fan, stranger = await make_users(4, prefix="priv")
    await ok(gql, FOLLOW_OR_REQUEST, {"id": owner.gid}, friend, "FollowSuccess")  # while public
    await ok(gql, FOLLOW_OR_REQUEST, {"id": friend.gid}, owner, "FollowSuccess")
    await make_private(gql, owner)
    pid = await post(gql, owner, "for my followers only #privtag")
    await ok(gql, FOLLOW_OR_REQUEST, {"id": owner.gid}, fan, "FollowRequestedSuccess")
    for viewer in (fan, stranger, None):
        token = viewer.token if viewer else None
        profile = (await gql(PROFILE, {"u": owner.username}, token=token))["data"]["user"]
        assert profile["username"] == owner.username and profile["isPrivate"] is True
        assert (profile["followerCount"], profile["followingCount"], profile["postCount"]) == (
            1,
            1,
            1,
        )
        for name, total in (("posts", 1), ("followers", 1), ("following", 1)):
            assert profile[name] == closed(total, "PRIVATE_ACCOUNT"), (name, profile[name])
        assert (await gql(NODE, {"id": pid}, token=token))["data"]["node"] is None
        assert (await gql(NODES, {"ids": [pid, owner.gid]}, token=token))["data"]["nodes"] == [
            None,
            {"id": owner.gid},
        ]
        tagged = (await gql(HASHTAG, {"n": "privtag"}, token=token))["data"]["hashtag"]
        assert tagged["posts"]["edges"] == []
    # A follower from before the switch, and the owner, see everything.
    for viewer in (friend, owner):
        profile = (await gql(PROFILE, {"u": owner.username}, token=viewer.token))["data"]["user"]
        assert profile["posts"]["edges"] == [
            {"node": {"caption": "for my followers only #privtag"}}
        ]
        assert profile["followers"]["edges"] == [{"node": {"username": friend.username}}]
        assert profile["following"]["totalCount"] == 1
        node = (await gql(NODE, {"id": pid}, token=viewer.token))["data"]["node"]
        assert node == {"id": pid, "caption": "for my followers only #privtag"}
        tagged = (await gql(HASHTAG, {"n": "privtag"}, token=viewer.token))["data"]["hashtag"]
        assert len(tagged["posts"]["edges"]) == 1
    assert await feed_captions(gql, friend) == ["for my followers only #privtag"]
    assert await feed_captions(gql, fan) == []


async def test_approval_makes_a_follower_who_then_sees_everything(gql, make_users, engine, worker):
    owner, fan = await make_users(2, prefix="priv")
    await make_private(gql, owner)
    await post(gql, owner, "private hello")
    await ok(gql, FOLLOW_OR_REQUEST, {"id": owner.gid}, fan, "FollowRequestedSuccess")
    assert await feed_captions(gql, fan) == []  # builds the fan's cached feed (empty)
    listed = (await gql(REQUESTS, {"first": 10}, token=owner.token))["data"]["viewer"]
    assert [e["node"]["username"] for e in listed["followRequests"]["edges"]] == [fan.username]

    out = await ok(gql, APPROVE, {"id": fan.gid}, owner, "ApproveFollowRequestSuccess")
    assert out["user"] == {"username": fan.username, "followsViewer": True}
    assert await counts(gql, owner) == (1, 0)
    assert await counts(gql, fan) == (0, 1)
    assert await pending_requests(engine, owner) == []
    follow_events = await events(engine, "follow.created", followee_id=str(owner.id))
    assert follow_events == [{"follower_id": str(fan.id), "followee_id": str(owner.id)}]

    profile = (await gql(PROFILE, {"u": owner.username}, token=fan.token))["data"]["user"]
    assert profile["followedByViewer"] is True and profile["followRequestedByViewer"] is False
    assert profile["posts"]["edges"] == [{"node": {"caption": "private hello"}}]
    assert profile["followers"]["edges"] == [{"node": {"username": fan.username}}]
    await worker.drain()  # follow.created merges the owner's posts into the cached feed
    assert await feed_captions(gql, fan) == ["private hello"]

    # Approving again is a success that changes nothing.
    await ok(gql, APPROVE, {"id": fan.gid}, owner, "ApproveFollowRequestSuccess")
    assert await counts(gql, owner) == (1, 0)
    assert len(await events(engine, "follow.created", followee_id=str(owner.id))) == 1
    await no_follow_count_drift(engine)


async def test_rejection_changes_nothing_else_and_the_fan_may_ask_again(gql, make_users, engine):
    owner, fan = await make_users(2, prefix="priv")
    await make_private(gql, owner)
    await ok(gql, FOLLOW_OR_REQUEST, {"id": owner.gid}, fan, "FollowRequestedSuccess")
    out = await ok(gql, REJECT, {"id": fan.gid}, owner, "RejectFollowRequestSuccess")
    assert out["user"] == {"username": fan.username, "followsViewer": False}
    assert await pending_requests(engine, owner) == []
    assert await counts(gql, owner) == (0, 0)
    assert await events(engine, "follow_request.rejected", target_id=str(owner.id)) == [
        {"requester_id": str(fan.id), "target_id": str(owner.id)}
    ]
    again = await ok(gql, REJECT, {"id": fan.gid}, owner, "NotFoundError")
    assert again["code"] == "NOT_FOUND"
    none = await ok(gql, APPROVE, {"id": fan.gid}, owner, "NotFoundError")
    assert none["code"] == "NOT_FOUND"
    assert await counts(gql, owner) == (0, 0)
    await ok(gql, FOLLOW_OR_REQUEST, {"id": owner.gid}, fan, "FollowRequestedSuccess")
    assert await pending_requests(engine, owner) == [fan.id]


async def test_bad_ids_and_self_are_typed_errors(gql, make_users):
    (owner,) = await make_users(1, prefix="priv")
    bad = await ok(gql, APPROVE, {"id": "not-an-id"}, owner, "ValidationError")
    assert bad["field"] == "userId"
    assert (await ok(gql, APPROVE, {"id": owner.gid}, owner, "NotFoundError"))["code"] == (
        "NOT_FOUND"
    )
    assert (await ok(gql, REJECT, {"id": owner.gid}, owner, "NotFoundError"))["code"] == (
        "NOT_FOUND"
    )


async def test_unfollow_withdraws_a_pending_request(gql, make_users, engine):
    owner, fan = await make_users(2, prefix="priv")
    await make_private(gql, owner)
    await ok(gql, FOLLOW_OR_REQUEST, {"id": owner.gid}, fan, "FollowRequestedSuccess")
    await ok(gql, UNFOLLOW, {"id": owner.gid}, fan, "UnfollowSuccess")
    assert await pending_requests(engine, owner) == []
    assert await events(engine, "follow_request.cancelled", target_id=str(owner.id)) == [
        {"requester_id": str(fan.id), "target_id": str(owner.id)}
    ]
    profile = (await gql(PROFILE, {"u": owner.username}, token=fan.token))["data"]["user"]
    assert profile["followRequestedByViewer"] is False
    assert await counts(gql, owner) == (0, 0)


async def test_existing_followers_stay_when_the_account_turns_private(gql, make_users, engine):
    owner, fan = await make_users(2, prefix="priv")
    await ok(gql, FOLLOW_OR_REQUEST, {"id": owner.gid}, fan, "FollowSuccess")
    await make_private(gql, owner)
    out = await ok(
        gql, FOLLOW_OR_REQUEST, {"id": owner.gid}, fan, "FollowSuccess"
    )  # nothing to ask
    assert out["user"]["followedByViewer"] is True
    assert out["user"]["followRequestedByViewer"] is False
    assert await pending_requests(engine, owner) == []
    assert await counts(gql, owner) == (1, 0)


async def test_follow_requests_page_newest_first_and_only_for_the_owner(gql, make_users):
    (owner,) = await make_users(1, prefix="priv")
    fans = await make_users(5, prefix="fan")
    await make_private(gql, owner)
    for fan in fans:
        await ok(gql, FOLLOW_OR_REQUEST, {"id": owner.gid}, fan, "FollowRequestedSuccess")
    seen, after = [], None
    while True:
        out = await gql(REQUESTS, {"first": 2, "after": after}, token=owner.token)
        page = out["data"]["viewer"]["followRequests"]
        seen += [e["node"]["username"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == [f.username for f in reversed(fans)]
    other = await gql(
        "query($u: String!) { user(username: $u) { followRequests { edges { cursor } } } }",
        {"u": owner.username},
        token=fans[0].token,
    )
    assert other["errors"][0]["extensions"]["code"] == "FORBIDDEN"


async def test_switching_to_public_accepts_every_pending_request(gql, make_users, engine, settings):
    (owner,) = await make_users(1, prefix="priv")
    fans = await make_users(6, prefix="fan")
    await make_private(gql, owner)
    for fan in fans:
        await ok(gql, FOLLOW_OR_REQUEST, {"id": owner.gid}, fan, "FollowRequestedSuccess")
    # a banned requester gets no follow
    await set_user_status(engine, fans[0].id, "banned", counter_shards=settings.counter_shards)
    out = await ok(gql, SET_PRIVATE, {"p": False}, owner, "UpdateProfileSuccess")
    assert out["user"] == {"isPrivate": False, "followerCount": 5}
    assert await pending_requests(engine, owner) == []
    for fan in fans[1:]:
        assert await counts(gql, fan) == (0, 1)
    accepted = await events(engine, "follow.created", followee_id=str(owner.id))
    assert sorted(e["follower_id"] for e in accepted) == sorted(str(f.id) for f in fans[1:])
    assert all(set(e) == {"follower_id", "followee_id"} for e in accepted)
    # Now public: a follow is a follow.
    (late,) = await make_users(1, prefix="fan")
    await ok(gql, FOLLOW_OR_REQUEST, {"id": owner.gid}, late, "FollowSuccess")
    assert await counts(gql, owner) == (6, 0)
    await no_follow_count_drift(engine)


async def test_block_cancels_requests_both_ways(gql, make_users, engine):
    a, b, c = await make_users(3, prefix="priv")
    await make_private(gql, a)
    await make_private(gql, b)
    await ok(gql, FOLLOW_OR_REQUEST, {"id": b.gid}, a, "FollowRequestedSuccess")
    await ok(gql, FOLLOW_OR_REQUEST, {"id": a.gid}, b, "FollowRequestedSuccess")
    await ok(gql, FOLLOW_OR_REQUEST, {"id": a.gid}, c, "FollowRequestedSuccess")  # unrelated: stays
    await ok(gql, BLOCK, {"id": b.gid}, a, "BlockSuccess")
    assert await pending_requests(engine, a) == [c.id]
    assert await pending_requests(engine, b) == []
    cancelled = await events(engine, "follow_request.cancelled", reason="block")
    pairs = {(e["requester_id"], e["target_id"]) for e in cancelled}
    assert {(str(a.id), str(b.id)), (str(b.id), str(a.id))} <= pairs
    for actor, target in ((a, b), (b, a)):
        refused = await ok(gql, FOLLOW_OR_REQUEST, {"id": target.gid}, actor, "BlockedError")
        assert refused["code"] == "BLOCKED"
    assert (await ok(gql, APPROVE, {"id": b.gid}, a, "NotFoundError"))["code"] == "NOT_FOUND"
    assert await counts(gql, a) == (0, 0) and await counts(gql, b) == (0, 0)


async def test_request_pages_and_flags_cost_constant_round_trips(gql, make_users, engine):
    (owner,) = await make_users(1, prefix="priv")
    fans = await make_users(12, prefix="fan")
    await make_private(gql, owner)
    for fan in fans:
        await make_private(gql, fan)
        await ok(gql, FOLLOW_OR_REQUEST, {"id": owner.gid}, fan, "FollowRequestedSuccess")
    for fan in fans[::3]:  # the owner asks some of them back
        await ok(gql, FOLLOW_OR_REQUEST, {"id": fan.gid}, owner, "FollowRequestedSuccess")
    query = """query($first: Int!) { viewer { followRequests(first: $first) { edges { node {
      username isPrivate followerCount followedByViewer followRequestedByViewer
      followers(first: 1) { totalCount restricted } } } } } }"""
    statements = {}
    for n in (3, 12):
        data, sql = await measured(gql, engine, query, {"first": n}, owner.token)
        nodes = [e["node"] for e in data["viewer"]["followRequests"]["edges"]]
        assert [u["username"] for u in nodes] == [f.username for f in reversed(fans)][:n]
        asked = {f.username for f in fans[::3]}
        assert all(u["followRequestedByViewer"] is (u["username"] in asked) for u in nodes)
        assert all(u["followers"]["restricted"] == "PRIVATE_ACCOUNT" for u in nodes)
        assert all(u["isPrivate"] for u in nodes)
        statements[n] = len(sql)
    assert statements[3] == statements[12], statements


async def test_a_block_hides_posts_and_lists_both_ways(gql, make_users):
    """Like a private account's: the profile stays, its content does not."""
    from tests.support.actions import post
    from tests.support.documents import BLOCK

    owner, other = await make_users(2)
    await post(gql, owner, "not for you")
    q = """query($u: String!) { user(username: $u) { username postCount
        posts { edges { node { caption } } restricted } followers { totalCount restricted }
        following { totalCount restricted } } }"""
    before = (await gql(q, {"u": owner.username}, token=other.token))["data"]["user"]
    assert before["posts"]["edges"] == [{"node": {"caption": "not for you"}}]
    await gql(BLOCK, {"id": other.gid}, token=owner.token)
    for viewer, target in ((other, owner), (owner, other)):
        seen = (await gql(q, {"u": target.username}, token=viewer.token))["data"]["user"]
        assert seen["username"] == target.username
        assert seen["posts"] == {"edges": [], "restricted": "BLOCKED"}
        for name in ("followers", "following"):
            assert seen[name] == {"totalCount": 0, "restricted": "BLOCKED"}, (name, seen)
    mine = (await gql(q, {"u": owner.username}, token=owner.token))["data"]["user"]
    assert mine["posts"]["edges"] == [{"node": {"caption": "not for you"}}]
