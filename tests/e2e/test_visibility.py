"""Six inputs at the edges of the visibility rule, over GraphQL against real PostgreSQL,
Redis and the arq worker: one rule on every edge, and every count equal to its list
(docs/api/visibility.md "Who sees what")."""

from __future__ import annotations

import json

from redis.asyncio import Redis

from domain.counters.verify import verify_counts
from domain.moderation.set_user_status import set_user_status
from domain.realtime import user_channel
from tests.support.actions import post
from tests.support.documents import BLOCK, COMMENT, FOLLOW, LIKE, UNLIKE
from tests.support.polling import PATIENCE_S

NOTIFIED = """{ viewer { unreadNotificationCount notifications(first: 20) { edges { node {
  kind count actor { username } post { caption } comment { body post { caption } } } } } } }"""
NODE = """query($id: ID!) { node(id: $id) { __typename
  ... on Comment { body author { username } post { caption }
                   replies(first: 10) { edges { node { body } } } }
  ... on Post { caption } ... on User { username } } }"""
POST = """query($id: ID!) { node(id: $id) { ... on Post { caption likeCount commentCount
  likes(first: 20) { totalCount edges { node { username } } }
  comments(first: 20) { edges { node { body author { username }
    replies(first: 20) { edges { node { body } } } } } } } } }"""
PROFILE = """query($u: String!) { user(username: $u) { username followerCount followingCount
  followers(first: 20) { totalCount edges { node { username } } }
  following(first: 20) { totalCount edges { node { username } } } } }"""


async def comment(gql, user, post_id: str, body: str, parent: str | None = None) -> str:
    out = await gql(COMMENT, {"id": post_id, "body": body, "parent": parent}, token=user.token)
    result = out["data"]["addComment"]
    assert result["__typename"] == "AddCommentSuccess", result
    return result["comment"]["id"]


async def ok(gql, query: str, variables: dict, token: str | None = None) -> dict:
    out = await gql(query, variables, token=token)
    assert "errors" not in out, out
    return out["data"]


async def no_drift(engine, *users) -> None:
    report = await verify_counts(engine)
    ids = {u.id for u in users}
    assert [d for d in report.drift if d.entity_id in ids] == []


def listed(comments: dict) -> list[str]:
    """Bodies of a post's comments and their replies, as the list shows them."""
    out = []
    for edge in comments["edges"]:
        out.append(edge["node"]["body"])
        out += [r["node"]["body"] for r in edge["node"]["replies"]["edges"]]
    return out


# 1 ---------------------------------------------------------------------------------------


async def test_a_blocked_or_deleted_post_never_leaks_through_a_comment(
    gql, make_users, worker, settings, engine
):
    a, b, c = await make_users(3)
    pid = await post(gql, a, "secret caption")
    b_comment = await comment(gql, b, pid, "b comments")
    c_reply = await comment(gql, c, pid, "c replies", parent=b_comment)
    await worker.drain()
    before = await ok(gql, NOTIFIED, {}, b.token)
    assert "secret caption" in json.dumps(before)  # a REPLY, with comment { post }

    assert (await gql(BLOCK, {"id": b.gid}, token=a.token))["data"]["block"]["__typename"] == (
        "BlockSuccess"
    )
    after = await ok(gql, NOTIFIED, {}, b.token)
    assert "secret caption" not in json.dumps(after)
    (reply,) = [e["node"] for e in after["viewer"]["notifications"]["edges"]]
    assert (reply["kind"], reply["actor"], reply["post"], reply["comment"]) == (
        "REPLY",
        {"username": c.username},
        None,
        None,
    )
    for cid in (b_comment, c_reply):
        assert (await ok(gql, NODE, {"id": cid}, b.token))["node"] is None
        assert (await ok(gql, NODE, {"id": cid}, c.token))["node"]["post"] == {
            "caption": "secret caption"
        }

    # The post deleted: null for everyone, the post loader's deleted row included.
    a, b, c = await make_users(3)
    d_pid = await post(gql, a, "deleted caption")
    d_comment = await comment(gql, b, d_pid, "on a doomed post")
    d_reply = await comment(gql, c, d_pid, "reply on a doomed post", parent=d_comment)
    await worker.drain()
    delete = """mutation($id: ID!) { deletePost(input: { postId: $id }) { __typename } }"""
    await ok(gql, delete, {"id": d_pid}, a.token)
    for viewer in (None, a.token, b.token, c.token):
        for cid in (d_comment, d_reply):
            assert (await ok(gql, NODE, {"id": cid}, viewer))["node"] is None
    for user, kinds in ((a, ["COMMENT", "COMMENT"]), (b, ["REPLY"])):
        seen = await ok(gql, NOTIFIED, {}, user.token)  # still listed, without the post
        assert [e["node"]["kind"] for e in seen["viewer"]["notifications"]["edges"]] == kinds
        assert "deleted caption" not in json.dumps(seen)


# 2 ---------------------------------------------------------------------------------------


async def test_a_block_removes_the_blocked_users_notifications_and_unread_count(
    gql, make_users, worker, engine
):
    a, b, d = await make_users(3)
    pid = await post(gql, a, "a's post")
    b_pid = await post(gql, b, f"hello @{a.username}")  # MENTION
    await gql(FOLLOW, {"id": a.gid}, token=b.token)  # FOLLOW
    await gql(LIKE, {"id": pid}, token=d.token)
    await gql(LIKE, {"id": pid}, token=b.token)  # LIKE: "b and 1 other"
    await comment(gql, b, pid, "b's comment")  # COMMENT
    await gql(LIKE, {"id": b_pid}, token=a.token)  # and a notifies b of a like
    await worker.drain()
    before = await ok(gql, NOTIFIED, {}, a.token)
    assert before["viewer"]["unreadNotificationCount"] == 4
    assert {e["node"]["kind"] for e in before["viewer"]["notifications"]["edges"]} == {
        "FOLLOW",
        "LIKE",
        "COMMENT",
        "MENTION",
    }

    await ok(gql, BLOCK, {"id": b.gid}, a.token)
    after = await ok(gql, NOTIFIED, {}, a.token)
    items = [e["node"] for e in after["viewer"]["notifications"]["edges"]]
    assert [(n["kind"], n["actor"]["username"], n["count"]) for n in items] == [
        ("LIKE", d.username, 1)
    ]
    assert after["viewer"]["unreadNotificationCount"] == len(items) == 1
    assert b.username not in json.dumps(after)
    b_side = await ok(gql, NOTIFIED, {}, b.token)  # and the other way round
    assert b_side["viewer"] == {"unreadNotificationCount": 0, "notifications": {"edges": []}}
    await no_drift(engine, a, b, d)


# 3 ---------------------------------------------------------------------------------------


async def test_every_count_agrees_with_its_list_after_a_block_and_after_a_ban(
    gql, make_users, worker, engine, settings
):
    a, b, d, e = await make_users(4)
    pid = await post(gql, a, "counted")
    await gql(LIKE, {"id": pid}, token=b.token)
    await gql(LIKE, {"id": pid}, token=d.token)
    await comment(gql, b, pid, "from b")
    await ok(gql, BLOCK, {"id": b.gid}, a.token)
    seen = (await ok(gql, POST, {"id": pid}, a.token))["node"]
    assert seen["likeCount"] == seen["likes"]["totalCount"] == len(seen["likes"]["edges"]) == 1
    assert seen["commentCount"] == len(listed(seen["comments"])) == 0
    # A third account sees all of it, and one with its own block hides its own partner.
    assert (await ok(gql, POST, {"id": pid}, e.token))["node"]["likeCount"] == 2
    await ok(gql, BLOCK, {"id": e.gid}, d.token)
    seen = (await ok(gql, POST, {"id": pid}, e.token))["node"]
    assert seen["likeCount"] == seen["likes"]["totalCount"] == 1
    assert seen["likes"]["edges"] == [{"node": {"username": b.username}}]
    assert seen["commentCount"] == len(listed(seen["comments"])) == 1
    # followers of a third account, seen across a block
    star, f1, f2 = await make_users(3)
    for f in (f1, f2, d):
        await gql(FOLLOW, {"id": star.gid}, token=f.token)
    profile = (await ok(gql, PROFILE, {"u": star.username}, e.token))["user"]
    assert profile["followerCount"] == profile["followers"]["totalCount"] == 2
    assert len(profile["followers"]["edges"]) == 2

    # A ban: its comments and follows leave every count at once.
    a2, x, g = await make_users(3)
    pid2 = await post(gql, a2, "banned below")
    for i in range(3):
        await comment(gql, x, pid2, f"x {i}")
    await comment(gql, g, pid2, "from g")
    await gql(FOLLOW, {"id": a2.gid}, token=x.token)
    await set_user_status(engine, x.id, "banned", counter_shards=settings.counter_shards)
    seen = (await ok(gql, POST, {"id": pid2}, a2.token))["node"]
    assert seen["commentCount"] == len(listed(seen["comments"])) == 1
    profile = (await ok(gql, PROFILE, {"u": a2.username}, a2.token))["user"]
    assert profile["followerCount"] == profile["followers"]["totalCount"] == 0
    assert profile["followers"]["edges"] == []
    await no_drift(engine, a, b, d, e, star, a2, x, g)


# 4 ---------------------------------------------------------------------------------------


async def test_a_banned_accounts_content_is_unreachable_and_replies_go_with_their_thread(
    gql, make_users, worker, engine, settings
):
    a, x, g, v = await make_users(4)
    pid = await post(gql, a, "a's post")
    x_comment = await comment(gql, x, pid, "x speaks")
    g_reply = await comment(gql, g, pid, "g answers x", parent=x_comment)
    g_comment = await comment(gql, g, pid, "g speaks")
    x_reply = await comment(gql, x, pid, "x answers g", parent=g_comment)
    x_pid = await post(gql, x, "x's post")
    await gql(LIKE, {"id": pid}, token=x.token)

    # A block first: v blocks x; x's thread is gone for v, not for others.
    await ok(gql, BLOCK, {"id": x.gid}, v.token)
    for viewer, shown in (
        (v, ["g speaks"]),
        (a, ["x speaks", "g answers x", "g speaks", "x answers g"]),
    ):
        seen = (await ok(gql, POST, {"id": pid}, viewer.token))["node"]
        assert listed(seen["comments"]) == shown
        assert seen["commentCount"] == len(shown)
    assert (await ok(gql, NODE, {"id": g_reply}, v.token))["node"] is None

    await set_user_status(engine, x.id, "banned", counter_shards=settings.counter_shards)
    for viewer in (None, a.token, g.token):
        for gid in (x_comment, g_reply, x_reply, x_pid, x.gid):
            assert (await ok(gql, NODE, {"id": gid}, viewer))["node"] is None, gid
        seen = (await ok(gql, POST, {"id": pid}, viewer))["node"]
        assert listed(seen["comments"]) == ["g speaks"]
        assert seen["commentCount"] == 1
        assert seen["likeCount"] == seen["likes"]["totalCount"] == 0
        assert (await ok(gql, PROFILE, {"u": x.username}, viewer))["user"] is None
        assert x.username not in json.dumps(seen)
    # the rest of g's thread is still there
    node = (await ok(gql, NODE, {"id": g_comment}, None))["node"]
    assert node["body"] == "g speaks" and node["replies"]["edges"] == []
    await no_drift(engine, a, x, g, v)


# 5 ---------------------------------------------------------------------------------------


async def test_an_owner_only_field_is_null_alone_with_a_forbidden_error(gql, make_users):
    someone, other = await make_users(2)
    for field in (
        "feed(first: 1) { edges { cursor } }",
        "notifications(first: 1) { edges { cursor } }",
        "unreadNotificationCount",
        "followRequests(first: 1) { edges { cursor } }",
        "suggestedFollows(first: 1) { edges { cursor } }",
    ):
        name = field.split("(")[0].split(" ")[0]
        query = f'{{ user(username: "{someone.username}") {{ username {field} }} }}'
        for token in (other.token, None):
            out = await gql(query, token=token)
            assert out["data"]["user"] == {"username": someone.username, name: None}, out
            (error,) = out["errors"]
            assert error["extensions"]["code"] == "FORBIDDEN"
            assert error["path"] == ["user", name]


# 6 ---------------------------------------------------------------------------------------


async def test_a_like_notification_counts_people_not_likes(
    gql, make_users, worker, engine, settings
):
    author, liker, other = await make_users(3)
    pid = await post(gql, author, "like me, like me not")
    redis = Redis.from_url(settings.redis_url)
    pubsub = redis.pubsub()
    await pubsub.subscribe(user_channel(author.id))
    try:
        confirmed = await pubsub.get_message(timeout=PATIENCE_S)
        assert confirmed and confirmed["type"] == "subscribe", confirmed
        await gql(LIKE, {"id": pid}, token=liker.token)
        await worker.drain()
        for _ in range(5):  # unlike, like: each job run before the next toggle
            await gql(UNLIKE, {"id": pid}, token=liker.token)
            await worker.drain()
            await gql(LIKE, {"id": pid}, token=liker.token)
            await worker.drain()
        for _ in range(5):  # and toggled faster than the worker
            await gql(UNLIKE, {"id": pid}, token=liker.token)
            await gql(LIKE, {"id": pid}, token=liker.token)
        await worker.drain()
        seen = await ok(gql, NOTIFIED, {}, author.token)
        post_seen = (await ok(gql, POST, {"id": pid}, author.token))["node"]
        (like,) = [e["node"] for e in seen["viewer"]["notifications"]["edges"]]
        assert (like["kind"], like["count"], post_seen["likeCount"]) == ("LIKE", 1, 1)
        assert seen["viewer"]["unreadNotificationCount"] == 1
        await gql(LIKE, {"id": pid}, token=other.token)  # a second person: 2
        await worker.drain()
        seen = await ok(gql, NOTIFIED, {}, author.token)
        (like,) = [e["node"] for e in seen["viewer"]["notifications"]["edges"]]
        assert (like["count"], like["actor"]["username"]) == (2, other.username)
        # Every publish happened inside a job that drain() waited for, so what Redis sent
        # this subscriber is already on its way: the two expected (however slowly they
        # come), then nothing more until a pause.
        published = []
        while len(published) < 2 and (
            message := await pubsub.get_message(ignore_subscribe_messages=True, timeout=PATIENCE_S)
        ):
            published.append(json.loads(message["data"])["type"])
        while message := await pubsub.get_message(ignore_subscribe_messages=True, timeout=1):
            published.append(json.loads(message["data"])["type"])
        # once when created, once when the second person joined; the toggles: never
        assert published == ["notification", "notification"]
    finally:
        await pubsub.aclose()
        await redis.aclose()
    await no_drift(engine, author, liker, other)
