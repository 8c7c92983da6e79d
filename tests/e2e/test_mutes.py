"""Mute and the blocked list (docs/api/mute-and-block.md "Mute and blocked list"): a mute
keeps the muted account's posts out of the muter's home feed and its notifications out
of theirs, on every path (the feed, the notification list and count, feedItemAdded and
notificationAdded over WebSocket), without unfollowing and without a trace on the muted
account's side; viewer { blockedUsers mutedUsers } page the lists."""

from __future__ import annotations

import uuid

import pytest
from redis.asyncio import Redis
from sqlalchemy import text

from adapters.feedstore.publisher import RedisPublisher
from domain.db import new_id
from domain.moderation.set_user_status import set_user_status
from domain.realtime import user_channel
from domain.social.block_user import block_user
from domain.social.follow_user import follow_user
from domain.social.mute_user import mute_user
from tests.support.documents import FEED_SUB, NOTIFICATION_SUB
from tests.support.subscriptions import live, served
from tests.support.ws import TRANSPORT_WS, WSClient

MUTE = """mutation($id: ID!) { mute(input: { userId: $id }) {
  __typename ... on MuteSuccess { user { username mutedByViewer followedByViewer } }
  ... on Error { code } } }"""
UNMUTE = """mutation($id: ID!) { unmute(input: { userId: $id }) {
  __typename ... on UnmuteSuccess { user { mutedByViewer } } ... on Error { code } } }"""
CREATE = """mutation($c: String!) { createPost(input: { caption: $c }) {
  ... on CreatePostSuccess { post { id } } } }"""
LIKE = """mutation($id: ID!) { likePost(input: { postId: $id }) { __typename } }"""
COMMENT = """mutation($id: ID!, $b: String!) { addComment(input: { postId: $id, body: $b }) {
  __typename } }"""
FEED = "{ viewer { feed(first: 20) { edges { node { caption author { username } } } } } }"
NOTES = """{ viewer { unreadNotificationCount notifications(first: 20) {
  edges { node { kind actor { username } } } } } }"""
PROFILE = """query($u: String!) { user(username: $u) { followerCount followingCount
  mutedByViewer followedByViewer } }"""
LISTS = """query($n: Int!, $b: String, $m: String) { viewer {
  blockedUsers(first: $n, after: $b) { edges { cursor blockedAt node { username } }
    pageInfo { hasNextPage endCursor } }
  mutedUsers(first: $n, after: $m) { edges { cursor mutedAt node { username } }
    pageInfo { hasNextPage endCursor } } } }"""


@pytest.fixture
async def redis(settings):
    r = Redis.from_url(settings.redis_url)
    yield r
    await r.aclose()


async def captions(gql, user) -> list[str]:
    out = await gql(FEED, token=user.token)
    assert "errors" not in out, out
    return [e["node"]["caption"] for e in out["data"]["viewer"]["feed"]["edges"]]


async def notes(gql, user) -> tuple[int, list[tuple[str, str]]]:
    out = (await gql(NOTES, token=user.token))["data"]["viewer"]
    edges = out["notifications"]["edges"]
    return out["unreadNotificationCount"], [
        (e["node"]["kind"], e["node"]["actor"]["username"]) for e in edges
    ]


async def post(gql, user, caption: str) -> str:
    return (await gql(CREATE, {"c": caption}, token=user.token))["data"]["createPost"]["post"]["id"]


async def test_a_mute_hides_posts_and_notifications_from_the_muter_only(
    gql, engine, make_users, settings, worker
):
    k = settings.counter_shards
    me, loud, calm = await make_users(3, prefix="mu")
    for who in (loud, calm):
        await follow_user(engine, me.id, who.id, counter_shards=k)
    await follow_user(engine, loud.id, me.id, counter_shards=k)
    mine = await post(gql, me, "my post")
    await post(gql, loud, "loud 1")
    await post(gql, calm, "calm 1")
    await gql(LIKE, {"id": mine}, token=loud.token)
    await worker.drain()
    assert set(await captions(gql, me)) == {"my post", "loud 1", "calm 1"}
    unread, listed = await notes(gql, me)
    assert unread == 2 and set(listed) == {("FOLLOW", loud.username), ("LIKE", loud.username)}
    loud_before = (await gql(PROFILE, {"u": loud.username}, token=loud.token))["data"]["user"]
    loud_notes = await notes(gql, loud)
    assert loud_notes[1] == [("FOLLOW", me.username)]

    out = (await gql(MUTE, {"id": loud.gid}, token=me.token))["data"]["mute"]
    assert out == {
        "__typename": "MuteSuccess",
        "user": {"username": loud.username, "mutedByViewer": True, "followedByViewer": True},
    }
    assert (await gql(MUTE, {"id": loud.gid}, token=me.token))["data"]["mute"][
        "__typename"
    ] == "MuteSuccess"  # idempotent
    # Out of my feed (still followed), out of my notifications with the unread count.
    await post(gql, loud, "loud 2")
    await post(gql, calm, "calm 2")
    await gql(COMMENT, {"id": mine, "b": "loud again"}, token=loud.token)
    await gql(COMMENT, {"id": mine, "b": "calm here"}, token=calm.token)
    await worker.drain()
    assert await captions(gql, me) == ["calm 2", "calm 1", "my post"]
    assert await notes(gql, me) == (1, [("COMMENT", calm.username)])
    mine_profile = (await gql(PROFILE, {"u": loud.username}, token=me.token))["data"]["user"]
    assert mine_profile["followedByViewer"] and mine_profile["mutedByViewer"]
    # Nothing on their side: counts, flags, no notification.
    loud_after = (await gql(PROFILE, {"u": loud.username}, token=loud.token))["data"]["user"]
    assert loud_after == loud_before
    seen_by_loud = (await gql(PROFILE, {"u": me.username}, token=loud.token))["data"]["user"]
    assert seen_by_loud["mutedByViewer"] is False and seen_by_loud["followedByViewer"] is True
    assert await notes(gql, loud) == loud_notes

    # Unmuting brings the posts back at once; removed notifications stay removed.
    out = (await gql(UNMUTE, {"id": loud.gid}, token=me.token))["data"]["unmute"]
    assert out == {"__typename": "UnmuteSuccess", "user": {"mutedByViewer": False}}
    assert await captions(gql, me) == ["calm 2", "loud 2", "calm 1", "loud 1", "my post"]
    assert (await notes(gql, me))[0] == 1


async def test_mute_refuses_oneself_and_accounts_that_are_gone(gql, engine, make_users, settings):
    me, gone = await make_users(2, prefix="mr")
    out = (await gql(MUTE, {"id": me.gid}, token=me.token))["data"]["mute"]
    assert out == {"__typename": "CannotMuteSelfError", "code": "CANNOT_MUTE_SELF"}
    await set_user_status(engine, gone.id, "banned", counter_shards=settings.counter_shards)
    out = (await gql(MUTE, {"id": gone.gid}, token=me.token))["data"]["mute"]
    assert out == {"__typename": "NotFoundError", "code": "NOT_FOUND"}
    out = (await gql(MUTE, {"id": "nonsense"}, token=me.token))["data"]["mute"]
    assert out == {"__typename": "ValidationError", "code": "VALIDATION_FAILED"}


async def test_subscriptions_follow_the_mute_too(gql, engine, make_users, settings, redis, worker):
    k = settings.counter_shards
    me, loud, calm = await make_users(3, prefix="ms")
    for who in (loud, calm):
        await follow_user(engine, me.id, who.id, counter_shards=k)
    await mute_user(engine, me.id, loud.id, counter_shards=k)
    loud_id = await _post_of(engine, gql, loud, "muted")
    calm_id = await _post_of(engine, gql, calm, "heard")
    # A notification that slipped past the writers (as a race could): the rule hides it.
    note = new_id()
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO notifications (id, recipient_id, kind, actor_id, source_event_id)"
                " VALUES (:id, :me, 'follow', :loud, :ev)"
            ),
            {"id": note, "me": me.id, "loud": loud.id, "ev": new_id()},
        )
    assert (await notes(gql, me))[1] == []
    publisher = RedisPublisher(redis)
    async with served(settings, engine) as url:
        client = await WSClient.open(url, TRANSPORT_WS, me.token)
        try:
            await client.subscribe(FEED_SUB)
            await client.subscribe(NOTIFICATION_SUB)
            await live(redis, user_channel(me.id), online=me.id)
            await publisher.feed_item(loud_id, loud.id, [me.id])
            await publisher.notification_created(me.id, note)
            await publisher.feed_item(calm_id, calm.id, [me.id])
            got = await client.next()  # the muted author's post and notification: nothing
            assert got["data"]["feedItemAdded"]["caption"] == "heard"
            await client.nothing()
        finally:
            await client.close()


async def _latest_post(engine, author_id) -> uuid.UUID:
    async with engine.connect() as conn:
        return await conn.scalar(
            text("SELECT id FROM posts WHERE author_id = :a ORDER BY id DESC LIMIT 1"),
            {"a": author_id},
        )


async def _post_of(engine, gql, author, caption: str) -> uuid.UUID:
    await post(gql, author, caption)
    return await _latest_post(engine, author.id)


async def test_blocked_and_muted_lists_page_newest_first(gql, engine, make_users, settings):
    k = settings.counter_shards
    me, *others = await make_users(6, prefix="ls")
    blocked, muted = others[:3], others[3:]
    for who in blocked:
        await block_user(engine, me.id, who.id, counter_shards=k)
    for who in muted:
        await mute_user(engine, me.id, who.id, counter_shards=k)
    # Someone who blocked me is not on my list; a banned account leaves it.
    (stranger,) = await make_users(1, prefix="ls")
    await block_user(engine, stranger.id, me.id, counter_shards=k)
    await set_user_status(engine, muted[0].id, "banned", counter_shards=k)

    seen: dict[str, list[str]] = {"blockedUsers": [], "mutedUsers": []}
    cursors = {"blockedUsers": None, "mutedUsers": None}
    for _ in range(4):
        out = await gql(
            LISTS,
            {"n": 1, "b": cursors["blockedUsers"], "m": cursors["mutedUsers"]},
            token=me.token,
        )
        assert "errors" not in out, out
        for field in seen:
            page = out["data"]["viewer"][field]
            seen[field] += [e["node"]["username"] for e in page["edges"]]
            cursors[field] = page["pageInfo"]["endCursor"] or cursors[field]
    assert seen["blockedUsers"] == [u.username for u in reversed(blocked)]
    assert seen["mutedUsers"] == [u.username for u in reversed(muted[1:])]
    other = await gql(
        "query($u: String!) { user(username: $u) { blockedUsers { edges { cursor } } } }",
        {"u": me.username},
        token=blocked[0].token,
    )
    assert other["data"]["user"]["blockedUsers"] is None
    assert other["errors"][0]["extensions"]["code"] == "FORBIDDEN"


async def test_no_notification_from_a_muted_account_survives_a_race_with_the_mute(
    engine, make_users, settings, worker
):
    """Likes being notified while the mute commits: each notification is written before
    the mute (and removed by it) or refused after it, never left behind; the unread
    counter stays exact (the mute takes the pair lock notification writers take)."""
    import asyncio

    from app.jobs import ArqDispatcher
    from domain.counters.verify import verify_counts
    from domain.engagement.like_post import like_post
    from domain.posts.create_post import create_post

    k = settings.counter_shards
    me, fan = await make_users(2, prefix="mrace")
    posts = [await create_post(engine, me.id, caption=f"p{i}", counter_shards=k) for i in range(24)]

    dispatcher = ArqDispatcher(settings.redis_url, settings.arq_queue)  # the worker at once

    async def likes() -> None:
        for p in posts:
            await like_post(engine, fan.id, p.id, counter_shards=k, dispatcher=dispatcher)

    async def mute_midway() -> None:
        await asyncio.sleep(0)  # let the likes start
        for _ in range(12):  # wait until some like notifications exist, whatever the load
            async with engine.connect() as conn:
                if await conn.scalar(
                    text("SELECT count(*) FROM notifications WHERE recipient_id = :m"),
                    {"m": me.id},
                ):
                    break
            await asyncio.sleep(0.05)
        await mute_user(engine, me.id, fan.id, counter_shards=k)

    try:
        await asyncio.gather(likes(), mute_midway())
    finally:
        await dispatcher.close()
    await worker.drain()
    async with engine.connect() as conn:
        left = await conn.scalar(
            text(
                "SELECT count(*) FROM notifications n WHERE n.recipient_id = :m AND n.count > 0"
                " AND (n.actor_id = :f OR EXISTS (SELECT 1 FROM notification_actors a"
                " WHERE a.notification_id = n.id AND a.actor_id = :f AND a.withdrawn_at IS NULL))"
            ),
            {"m": me.id, "f": fan.id},
        )
    assert left == 0
    report = await verify_counts(engine, ["unread_notifications", "like_notification_people"])
    assert [d for d in report.drift if d.entity_id == me.id] == []
