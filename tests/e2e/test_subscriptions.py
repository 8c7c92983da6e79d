"""Subscriptions over graphql-transport-ws and graphql-ws, against two real API processes
(uvicorn), the test database, Redis and the in-process arq worker.

A subscriber on process A receives what a mutation on process B caused: events travel
through Redis pub/sub. Test settings: pull at >= 40 followers, fan-out pages of 7.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import time
import uuid

import pytest
from redis.asyncio import Redis
from sqlalchemy import text

from adapters.feedstore.publisher import RedisPublisher
from adapters.jwt_codec import JwtCodec
from domain.db import new_id
from domain.identity.tokens import TokenConfig, issue_access_token
from domain.realtime import post_channel, user_channel
from schema.ids import decode_global_id
from tests.support.documents import BLOCK, FEED_SUB, FOLLOW, NOTIFICATION_SUB
from tests.support.polling import PATIENCE_S
from tests.support.subscriptions import PROTOCOLS, live, local_server, server_tasks
from tests.support.ws import LEGACY_WS, TRANSPORT_WS, Refused, WSClient, start_api

CREATE = """mutation($c: String!) { createPost(input: { caption: $c }) {
  __typename ... on CreatePostSuccess { post { id } } ... on Error { code message } } }"""
LIKE = """mutation($id: ID!) { likePost(input: { postId: $id }) { __typename } }"""
EDIT = """mutation($id: ID!, $c: String!) { editPost(input: { postId: $id, caption: $c }) {
  __typename } }"""
UNLIKE = """mutation($id: ID!) { unlikePost(input: { postId: $id }) { __typename } }"""
COMMENT = """mutation($id: ID!, $b: String!) { addComment(input: { postId: $id, body: $b }) {
  __typename ... on AddCommentSuccess { comment { id } } } }"""
DELETE_COMMENT = """mutation($id: ID!) { deleteComment(input: { commentId: $id }) {
  __typename } }"""
RENAME = """mutation($n: String!) { updateProfile(input: { displayName: $n }) { __typename } }"""

ENGAGEMENT_SUB = """subscription($id: ID!) { postEngagementChanged(postId: $id) {
  likeCount commentCount post { id caption likeCount author { username } } } }"""


@pytest.fixture(scope="module")
def api_pair(settings):
    """Two API processes on the test database, Redis and arq queue: A and B."""
    env = {
        "DATABASE_URL": settings.database_url,
        "REDIS_URL": settings.redis_url,
        "ARQ_QUEUE": settings.arq_queue,
        "JWT_SECRET": settings.jwt_secret,
        "PULL_THRESHOLD": str(settings.pull_threshold),
        "PUSH_BACK_THRESHOLD": str(settings.push_back_threshold),
        "FANOUT_BATCH_SIZE": str(settings.fanout_batch_size),
        "WORKER_METRICS_PORT": "0",
        "METRICS_PORT": "0",  # no metrics port per API process of the tests
        "DB_POOL_SIZE": "3",  # the test server's max_connections is shared
        "DB_MAX_OVERFLOW": "4",
    }
    a = start_api(env)
    try:
        b = start_api(env)
    except Exception:
        a.stop()
        raise
    yield a, b
    a.stop()
    b.stop()


@pytest.fixture
async def redis(settings):
    r = Redis.from_url(settings.redis_url)
    yield r
    await r.aclose()


async def create_post(api, author, caption: str) -> str:
    out = (await api.gql(CREATE, {"c": caption}, token=author.token))["data"]["createPost"]
    assert out["__typename"] == "CreatePostSuccess", out
    return out["post"]["id"]


def pid_of(gid: str) -> uuid.UUID:
    return decode_global_id(gid, "Post", "id")


# -- across processes ----------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_like_and_comment_on_b_reach_engagement_subscriber_on_a(
    api_pair, make_users, redis, worker, protocol
):
    a, b = api_pair
    author, watcher, fan = await make_users(3)
    gid = await create_post(b, author, "watch me")
    client = await WSClient.open(a.ws, protocol, watcher.token)
    try:
        await client.subscribe(ENGAGEMENT_SUB, {"id": gid})
        await live(redis, post_channel(pid_of(gid)))
        await b.gql(LIKE, {"id": gid}, token=fan.token)
        got = (await client.next())["data"]["postEngagementChanged"]
        assert got == {
            "likeCount": 1,
            "commentCount": 0,
            "post": {
                "id": gid,
                "caption": "watch me",
                "likeCount": 1,
                "author": {"username": author.username},
            },
        }
        out = await b.gql(COMMENT, {"id": gid, "b": "nice"}, token=fan.token)
        comment = out["data"]["addComment"]["comment"]["id"]
        got = (await client.next())["data"]["postEngagementChanged"]
        assert (got["likeCount"], got["commentCount"]) == (1, 1)
        await b.gql(UNLIKE, {"id": gid}, token=fan.token)
        got = (await client.next())["data"]["postEngagementChanged"]
        assert (got["likeCount"], got["commentCount"]) == (0, 1)
        # deleteComment does not know its post: the worker publishes it from the outbox.
        await b.gql(DELETE_COMMENT, {"id": comment}, token=fan.token)
        got = (await client.next())["data"]["postEngagementChanged"]
        assert (got["likeCount"], got["commentCount"]) == (0, 0)
        await b.gql(LIKE, {"id": gid}, token=fan.token)
        await b.gql(LIKE, {"id": gid}, token=fan.token)  # idempotent: no second event
        got = (await client.next())["data"]["postEngagementChanged"]
        assert got["likeCount"] == 1
        await client.nothing()
    finally:
        await client.close()


async def test_a_caption_edit_on_b_reaches_engagement_subscriber_on_a(
    api_pair, make_users, redis, worker
):
    a, b = api_pair
    author, watcher = await make_users(2)
    gid = await create_post(b, author, "first words")
    client = await WSClient.open(a.ws, TRANSPORT_WS, watcher.token)
    try:
        await client.subscribe(ENGAGEMENT_SUB, {"id": gid})
        await live(redis, post_channel(pid_of(gid)))
        out = await b.gql(EDIT, {"id": gid, "c": "better words"}, token=author.token)
        assert out["data"]["editPost"]["__typename"] == "EditPostSuccess", out
        got = (await client.next())["data"]["postEngagementChanged"]
        assert got["post"]["caption"] == "better words"
    finally:
        await client.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_post_on_b_reaches_following_subscriber_on_a_with_fresh_data_per_event(
    api_pair, make_users, redis, worker, protocol
):
    a, b = api_pair
    author, follower = await make_users(2)
    await b.gql(FOLLOW, {"id": author.gid}, token=follower.token)
    await worker.drain()
    client = await WSClient.open(a.ws, protocol, follower.token)
    try:
        await client.subscribe(FEED_SUB)
        await live(redis, user_channel(follower.id), online=follower.id)
        await create_post(b, author, "first")
        got = (await client.next())["data"]["feedItemAdded"]
        assert got["caption"] == "first"
        assert got["author"] == {"username": author.username, "displayName": author.username}
        # A new event sees the author's new name: its dataloaders are new.
        await b.gql(RENAME, {"n": "Renamed Author"}, token=author.token)
        await create_post(b, author, "second")
        got = (await client.next())["data"]["feedItemAdded"]
        assert (got["caption"], got["author"]["displayName"]) == ("second", "Renamed Author")
        # The viewer's own posts enter their feed too.
        await create_post(b, follower, "mine")
        assert (await client.next())["data"]["feedItemAdded"]["caption"] == "mine"
        await client.nothing()
    finally:
        await client.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_notifications_of_mutations_on_b_reach_their_recipient_on_a(
    api_pair, make_users, redis, worker, protocol
):
    a, b = api_pair
    author, fan, bystander = await make_users(3)
    gid = await create_post(b, author, "notice me")
    await worker.drain()
    mine = await WSClient.open(a.ws, protocol, author.token)
    theirs = await WSClient.open(a.ws, protocol, bystander.token)
    try:
        for c, u in ((mine, author), (theirs, bystander)):
            await c.subscribe(NOTIFICATION_SUB)
            await live(redis, user_channel(u.id))
        await b.gql(LIKE, {"id": gid}, token=fan.token)
        got = (await mine.next())["data"]["notificationAdded"]
        assert (got["kind"], got["count"], got["read"]) == ("LIKE", 1, False)
        assert got["actor"] == {"username": fan.username} and got["post"] == {"id": gid}
        await b.gql(FOLLOW, {"id": author.gid}, token=fan.token)
        got = (await mine.next())["data"]["notificationAdded"]
        assert (got["kind"], got["actor"]) == ("FOLLOW", {"username": fan.username})
        await theirs.nothing()  # nothing for anyone else
    finally:
        await mine.close()
        await theirs.close()


async def test_pull_author_post_reaches_online_followers_only(
    api_pair, make_users, redis, worker, engine
):
    a, b = api_pair
    (celeb,) = await make_users(1)
    fans = await make_users(42)  # >= 40 followers: pull
    (stranger,) = await make_users(1)
    await asyncio.gather(*(b.gql(FOLLOW, {"id": celeb.gid}, token=f.token) for f in fans))
    await worker.drain()
    watching = fans[:3]
    clients = [await WSClient.open(a.ws, TRANSPORT_WS, u.token) for u in [*watching, stranger]]
    try:
        for c, u in zip(clients, [*watching, stranger], strict=True):
            await c.subscribe(FEED_SUB)
            await live(redis, user_channel(u.id), online=u.id)
        gid = await create_post(b, celeb, "from the stage")
        for c in clients[:3]:
            assert (await c.next())["data"]["feedItemAdded"]["id"] == gid
        await worker.drain()
        async with engine.connect() as conn:
            mode = await conn.scalar(
                text("SELECT mode FROM author_feed_modes WHERE author_id = :a"), {"a": celeb.id}
            )
        assert mode == "pull"
        await clients[3].nothing()
    finally:
        for c in clients:
            await c.close()


# -- who receives what ---------------------------------------------------------------


async def test_private_account_post_never_reaches_a_non_follower(
    api_pair, make_users, redis, worker, engine, settings
):
    a, b = api_pair
    private, follower, outsider = await make_users(3)
    await b.gql(FOLLOW, {"id": private.gid}, token=follower.token)
    await worker.drain()
    async with engine.begin() as conn:
        await conn.execute(
            text("UPDATE users SET is_private = true WHERE id = :id"), {"id": private.id}
        )
    friend = await WSClient.open(a.ws, TRANSPORT_WS, follower.token)
    other = await WSClient.open(a.ws, LEGACY_WS, outsider.token)
    try:
        for c, u in ((friend, follower), (other, outsider)):
            await c.subscribe(FEED_SUB)
            await live(redis, user_channel(u.id), online=u.id)
        gid = await create_post(b, private, "followers only")
        assert (await friend.next())["data"]["feedItemAdded"]["id"] == gid
        # Even an event that names the post on the outsider's channel is re-checked.
        publisher = RedisPublisher(redis)
        await publisher.feed_item(pid_of(gid), private.id, [outsider.id])
        await other.nothing()
        # ... and the outsider cannot watch its engagement.
        op = await other.subscribe(ENGAGEMENT_SUB, {"id": gid})
        msg = await other.message()
        assert msg["type"] == "error" and msg["id"] == op, msg
        assert msg["payload"]["extensions"]["code"] == "NOT_FOUND"
    finally:
        await friend.close()
        await other.close()


async def test_blocked_user_receives_nothing_more(api_pair, make_users, redis, worker):
    a, b = api_pair
    author, blocked, bystander, fan = await make_users(4)
    await b.gql(FOLLOW, {"id": author.gid}, token=blocked.token)
    await worker.drain()
    gid = await create_post(b, author, "before the block")
    await worker.drain()
    victim = await WSClient.open(a.ws, TRANSPORT_WS, blocked.token)
    watcher = await WSClient.open(a.ws, TRANSPORT_WS, bystander.token)
    try:
        await victim.subscribe(FEED_SUB)
        await live(redis, user_channel(blocked.id), online=blocked.id)
        for c in (victim, watcher):
            await c.subscribe(ENGAGEMENT_SUB, {"id": gid})
        await live(redis, post_channel(pid_of(gid)))
        await b.gql(LIKE, {"id": gid}, token=fan.token)
        for c in (victim, watcher):  # both may see it, for now
            assert (await c.next())["data"]["postEngagementChanged"]["likeCount"] == 1
        out = await b.gql(BLOCK, {"id": blocked.gid}, token=author.token)
        assert out["data"]["block"]["__typename"] == "BlockSuccess"
        await worker.drain()
        await b.gql(UNLIKE, {"id": gid}, token=fan.token)
        assert (await watcher.next())["data"]["postEngagementChanged"]["likeCount"] == 0
        await create_post(b, author, "after the block")
        await worker.drain()
        await RedisPublisher(redis).feed_item(pid_of(gid), author.id, [blocked.id])
        await victim.nothing()  # neither the new count, nor the post, nor a forged event
    finally:
        await victim.close()
        await watcher.close()


async def test_events_follow_the_visibility_rule_and_counts_as_the_viewer_sees_them(
    api_pair, make_users, redis, worker, settings, engine
):
    """A subscription event goes through the same rule as every other edge:
    engagement counts as the subscriber sees them (a blocked liker counted out), and
    nothing of a banned account, even from a forged event."""
    from domain.moderation.set_user_status import set_user_status

    a, b = api_pair
    author, watcher, blocked, fan, banned = await make_users(5)
    await b.gql(BLOCK, {"id": blocked.gid}, token=watcher.token)
    await b.gql(FOLLOW, {"id": banned.gid}, token=watcher.token)
    gid = await create_post(b, author, "watched")
    banned_gid = await create_post(b, banned, "soon gone")
    await b.gql(FOLLOW, {"id": author.gid}, token=banned.token)  # a FOLLOW for author
    await worker.drain()
    async with engine.connect() as conn:
        follow_notification = await conn.scalar(
            text("SELECT id FROM notifications WHERE recipient_id = :r"), {"r": author.id}
        )
    client = await WSClient.open(a.ws, TRANSPORT_WS, watcher.token)
    mine = await WSClient.open(a.ws, TRANSPORT_WS, author.token)
    try:
        await client.subscribe(ENGAGEMENT_SUB, {"id": gid})
        await live(redis, post_channel(pid_of(gid)))
        await client.subscribe(FEED_SUB)
        await live(redis, user_channel(watcher.id), online=watcher.id)
        await mine.subscribe(NOTIFICATION_SUB)
        await live(redis, user_channel(author.id))
        await b.gql(LIKE, {"id": gid}, token=blocked.token)
        await b.gql(LIKE, {"id": gid}, token=fan.token)
        got = (await client.next())["data"]["postEngagementChanged"]
        assert (got["likeCount"], got["post"]["likeCount"]) == (1, 1)  # the fan only
        await worker.drain()
        for _ in range(2):  # created by the first like, joined by the second (read fresh)
            got = (await mine.next())["data"]["notificationAdded"]
            assert (got["kind"], got["count"]) in {("LIKE", 1), ("LIKE", 2)}
        assert got["count"] == 2

        await set_user_status(engine, banned.id, "banned", counter_shards=settings.counter_shards)
        publisher = RedisPublisher(redis)
        await publisher.feed_item(pid_of(banned_gid), banned.id, [watcher.id])
        await publisher.notification_created(author.id, follow_notification)
        await asyncio.gather(client.nothing(), mine.nothing())
    finally:
        await client.close()
        await mine.close()


# -- authentication ------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_socket_without_a_valid_token_is_refused(api_pair, make_users, settings, protocol):
    a, _ = api_pair
    (user,) = await make_users(1)
    expired = issue_access_token(
        TokenConfig(
            codec=JwtCodec(),
            secret=settings.jwt_secret,
            access_ttl=-settings.token_config.access_ttl,
        ),
        user.id,
        new_id(),
    )
    for token in (None, "not-a-jwt", expired, user.token.replace(".", "x", 1)):
        with pytest.raises(Refused) as refused:
            await WSClient.open(a.ws, protocol, token)
        if protocol == TRANSPORT_WS:
            assert refused.value.code == 4403 and refused.value.reason.startswith("Forbidden: ")
        else:
            assert refused.value.reason == "connection_error"
            assert refused.value.payload["code"] == "UNAUTHENTICATED"
    # The key is matched case-insensitively.
    for key in ("Authorization", "AUTHORIZATION"):
        client = await WSClient.open(a.ws, protocol, user.token, key=key)
        await client.close()


async def test_subscription_arguments_are_checked_before_the_stream(api_pair, make_users):
    a, _ = api_pair
    (user,) = await make_users(1)
    client = await WSClient.open(a.ws, TRANSPORT_WS, user.token)
    try:
        for gid, code in (
            ("garbage", "BAD_USER_INPUT"),
            (user.gid, "BAD_USER_INPUT"),  # a User id, not a Post id
            (_post_gid(uuid.uuid4()), "NOT_FOUND"),
        ):
            op = await client.subscribe(ENGAGEMENT_SUB, {"id": gid})
            msg = await client.message()
            assert (msg["type"], msg["id"]) == ("error", op), msg
            assert msg["payload"][0]["extensions"]["code"] == code
    finally:
        await client.close()


def _post_gid(pk: uuid.UUID) -> str:
    from schema.ids import to_global_id

    return to_global_id("Post", pk)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_an_expired_token_ends_the_stream_at_the_next_event(
    api_pair, make_users, redis, settings, protocol
):
    a, b = api_pair
    author, watcher, fan = await make_users(3)
    gid = await create_post(b, author, "short-lived")
    # Long enough to connect and subscribe on a loaded machine; then the test waits for
    # the expiry itself (the token's own deadline, the one thing here that is time).
    ttl = dt.timedelta(seconds=8)
    expires_at = time.time() + ttl.total_seconds()
    brief = issue_access_token(
        TokenConfig(codec=JwtCodec(), secret=settings.jwt_secret, access_ttl=ttl),
        watcher.id,
        watcher.session_id,
    )
    client = await WSClient.open(a.ws, protocol, brief)
    try:
        await client.subscribe(ENGAGEMENT_SUB, {"id": gid})
        await live(redis, post_channel(pid_of(gid)))
        await asyncio.sleep(max(0.0, expires_at + 1.0 - time.time()))
        await b.gql(LIKE, {"id": gid}, token=fan.token)
        got = await client.next()
        assert got["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
        assert (await client.message())["type"] == "complete"
    finally:
        await client.close()


# -- clean-up ------------------------------------------------------------------------


async def test_events_leave_nothing_behind_in_a_long_subscription(
    settings, engine, make_users, redis
):
    """graphql-core 3.3 memoizes subfields on the subscription's executor, shared with
    every per-event copy: without app.graphql's fix each event leaked ~20 objects."""
    author, watcher = await make_users(2)
    gid = await create_post_in_db(engine, author)
    async with local_server(settings, engine, gc_freeze=False) as (_, url):
        client = await WSClient.open(url, TRANSPORT_WS, watcher.token)
        try:
            await client.subscribe(ENGAGEMENT_SUB, {"id": gid})
            await live(redis, post_channel(pid_of(gid)))
            publisher = RedisPublisher(redis)

            async def events(n: int) -> None:
                for _ in range(n):
                    await bump_likes(engine, pid_of(gid))
                    await publisher.engagement_changed(pid_of(gid))
                    await client.next()

            await events(5)
            gc.collect()
            before = _count("CollectedFields")
            await events(100)
            gc.collect()
            assert _count("CollectedFields") - before < 10
        finally:
            await client.close()


def _count(kind: str) -> int:
    return sum(1 for o in gc.get_objects() if type(o).__name__ == kind)


async def bump_likes(engine, post_id: uuid.UUID) -> None:
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO counter_shards (entity_id, kind, shard, value)"
                " VALUES (:p, 'likes', 0, 1) ON CONFLICT (entity_id, kind, shard)"
                " DO UPDATE SET value = counter_shards.value + 1"
            ),
            {"p": post_id},
        )


async def test_connect_disconnect_cycles_leave_no_subscription_or_task(
    settings, engine, make_users, redis
):
    async with local_server(settings, engine) as (app, url):
        author, *users = await make_users(6)
        gid = await create_post_in_db(engine, author)
        hub = app.state.realtime.hub
        ours = {post_channel(pid_of(gid))} | {user_channel(u.id) for u in users}

        async def cycle(i: int) -> None:
            u = users[i % len(users)]
            client = await WSClient.open(url, PROTOCOLS[i % 2], u.token)
            await client.subscribe(FEED_SUB)
            op = await client.subscribe(ENGAGEMENT_SUB, {"id": gid})
            await live(redis, post_channel(pid_of(gid)))
            await live(redis, user_channel(u.id))
            if i % 3 == 0:
                await client.stop(op)  # one operation stopped before the socket goes
            await client.close()

        await cycle(0)  # the hub's three tasks start on first use
        await _settle(hub)
        baseline = server_tasks()
        for i in range(50):
            await cycle(i)
        await _settle(hub)
        assert hub.subscriber_count == 0 and hub.channel_count == 0
        left = {c.decode() for c in await redis.pubsub_channels("rt:*")} & ours
        assert left == set()
        assert await redis.pubsub_numsub(*ours) == [(c.encode(), 0) for c in ours]
        deadline = time.monotonic() + PATIENCE_S
        while True:
            if server_tasks() <= baseline or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
        assert server_tasks() <= baseline
    assert hub._tasks == []  # shutdown stopped the hub


async def _settle(hub) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while True:
        if not (hub.subscriber_count or hub._sent) or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.1)


async def create_post_in_db(engine, author) -> str:
    pk = new_id()
    async with engine.begin() as conn:
        await conn.execute(
            text("INSERT INTO posts (id, author_id, caption) VALUES (:id, :a, 'cycle')"),
            {"id": pk, "a": author.id},
        )
    return _post_gid(pk)
