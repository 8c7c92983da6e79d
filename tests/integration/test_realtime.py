"""The real-time building blocks against real Redis (and PostgreSQL for the follower walk):
the hub's channel reference counts, queues and shutdown, presence, and publishing."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from redis.asyncio import Redis
from sqlalchemy import event

from adapters.feedstore.publisher import RedisPublisher
from app.realtime import Hub, HubClosedError
from domain.db import utcnow
from domain.realtime import (
    ENGAGEMENT,
    FEED_ITEM,
    ONLINE_KEY,
    post_channel,
    user_channel,
)
from domain.realtime.channels import now_ms
from domain.realtime.feed_items import publish_to_online_followers
from schema.ids import decode_global_id
from tests.support.documents import FOLLOW
from tests.support.polling import arrives, eventually


@pytest.fixture
async def redis(settings):
    r = Redis.from_url(settings.redis_url)
    yield r
    await r.aclose()


@pytest.fixture
async def hub(redis):
    h = Hub(redis, presence_ttl_s=3, queue_size=4)
    yield h
    await h.close()


async def got(sub) -> dict:
    return await arrives(sub.get())


async def numsub(redis: Redis, channel: str) -> int:
    ((_, n),) = await redis.pubsub_numsub(channel)
    return n


async def test_one_redis_subscription_per_channel_whatever_the_local_subscribers(hub, redis):
    pid = uuid.uuid4()
    channel = post_channel(pid)
    publisher = RedisPublisher(redis)
    async with hub.subscribe(channel) as first:
        assert await numsub(redis, channel) == 1  # live once the context is entered
        async with hub.subscribe(channel) as second:
            assert await numsub(redis, channel) == 1
            await publisher.engagement_changed(pid)
            event = {"type": ENGAGEMENT, "post_id": str(pid)}
            assert await got(first) == await got(second) == event
        await asyncio.sleep(0.05)
        assert await numsub(redis, channel) == 1  # the first one still listens
        await publisher.engagement_changed(pid)
        assert (await got(first))["post_id"] == str(pid)
    await eventually(lambda: _zero(redis, channel))
    assert hub.channel_count == hub.subscriber_count == 0


async def _zero(redis, channel) -> bool:
    return await numsub(redis, channel) == 0


async def test_leaving_before_confirmation_and_coming_back_still_receives(hub, redis):
    channel = post_channel(uuid.uuid4())
    for _ in range(20):  # enter and leave as fast as possible, then stay
        async with hub.subscribe(channel):
            pass
    async with hub.subscribe(channel) as sub:
        await redis.publish(channel, b'{"type":"engagement","post_id":"x"}')
        assert (await got(sub))["post_id"] == "x"
    await eventually(lambda: _zero(redis, channel))
    await eventually(lambda: _forgotten(hub))  # once the UNSUBSCRIBE is answered


async def _forgotten(hub) -> bool:
    return hub._sent_gen == {} and hub._acked == {}


async def test_types_filter_and_a_full_queue_drops_the_oldest(hub, redis):
    channel = user_channel(uuid.uuid4())
    async with hub.subscribe(channel, types=[FEED_ITEM]) as sub:
        await redis.publish(channel, b'{"type":"notification","notification_id":"n"}')
        for i in range(6):  # queue_size is 4
            await redis.publish(channel, b'{"type":"feed_item","post_id":"%d"}' % i)
        await redis.publish(channel, b"not json")
        await eventually(lambda: _queued(sub, 4))
        assert [e["post_id"] for e in sub.pending()] == ["2", "3", "4", "5"]
        assert sub.dropped == 2


async def _queued(sub, n) -> bool:
    return len(sub._queue) == n


async def test_close_ends_waiting_subscribers(redis):
    hub = Hub(redis)
    got: list[BaseException] = []

    async def listen() -> None:
        try:
            async with hub.subscribe(post_channel(uuid.uuid4())) as sub:
                await sub.get()
        except HubClosedError as exc:
            got.append(exc)

    task = asyncio.create_task(listen())
    await eventually(lambda: _has_subscriber(hub))
    await hub.close()
    await arrives(task)
    assert len(got) == 1
    with pytest.raises(HubClosedError):
        async with hub.subscribe(post_channel(uuid.uuid4())):
            pass


async def _has_subscriber(hub) -> bool:
    return hub.subscriber_count == 1


async def test_presence_is_set_refreshed_and_lapses(hub, redis):
    user = uuid.uuid4()
    async with hub.subscribe(user_channel(user), presence=user):
        first = await redis.zscore(ONLINE_KEY, str(user))
        assert first > now_ms()

        async def extended() -> bool:  # a heartbeat (every ttl / 3 = 1 s) extends it
            return await redis.zscore(ONLINE_KEY, str(user)) > first

        await eventually(extended)
    # Left: never removed by this process (another may hold the user), it lapses.
    assert await redis.zscore(ONLINE_KEY, str(user)) is not None
    await redis.zadd(ONLINE_KEY, {str(user): now_ms() - 1})

    async def dropped() -> bool:  # the heartbeat drops expired entries
        return await redis.zscore(ONLINE_KEY, str(user)) is None

    await eventually(dropped)


async def test_feed_items_are_published_only_to_present_users(hub, redis):
    here, gone, never = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    await redis.zadd(ONLINE_KEY, {str(gone): now_ms() - 10})
    publisher = RedisPublisher(redis)
    async with hub.subscribe(user_channel(here), presence=here) as sub:
        async with hub.subscribe(user_channel(gone)) as stale:  # subscribed, not present
            post, author = uuid.uuid4(), uuid.uuid4()
            assert await publisher.feed_item(post, author, [never, gone, here]) == 1
            assert await got(sub) == {
                "type": FEED_ITEM,
                "post_id": str(post),
                "author_id": str(author),
            }
            await asyncio.sleep(0.1)
            assert stale.pending() == []


@pytest.mark.parametrize("walk", ["online", "followers"])
async def test_pull_post_reaches_online_followers_by_either_walk(
    hub, redis, gql, make_users, engine, settings, walk
):
    (author,) = await make_users(1)
    fans = await make_users(9)
    strangers = await make_users(3)
    await asyncio.gather(*(gql(FOLLOW, {"id": author.gid}, token=f.token) for f in fans))
    online = [*fans[:4], *strangers]
    publisher = RedisPublisher(redis)
    post = uuid.uuid4()
    async with AllSubscribed(hub, online) as subs:
        # followers=<huge> walks the online users; followers=1 walks the followers.
        followers = 10**9 if walk == "online" else 1
        sent = await publish_to_online_followers(
            engine,
            publisher,
            post_id=post,
            author_id=author.id,
            followers=followers,
            active_since=utcnow() - settings.feed_config.active_window,
            batch_size=2,
        )
        assert sent == 4
        for sub in subs[:4]:
            assert (await got(sub))["post_id"] == str(post)
        await asyncio.sleep(0.1)
        assert all(sub.pending() == [] for sub in subs[4:])


class AllSubscribed:
    """Subscribe each user's channel with presence; exit them all."""

    def __init__(self, hub: Hub, users) -> None:
        self.hub = hub
        self.users = users
        self.cms = []

    async def __aenter__(self):
        subs = []
        for u in self.users:
            cm = self.hub.subscribe(user_channel(u.id), presence=u.id)
            subs.append(await cm.__aenter__())
            self.cms.append(cm)
        return subs

    async def __aexit__(self, *exc):
        for cm in reversed(self.cms):
            await cm.__aexit__(None, None, None)


async def test_batched_engagement_reads_answer_each_viewer_by_their_own_rights(
    engine, make_users, gql
):
    from domain.realtime.queries import EngagementReads
    from tests.support.actions import post
    from tests.support.documents import BLOCK

    author, friend, blocked = await make_users(3)
    gid = await post(gql, author, "batched")
    await gql(BLOCK, {"id": blocked.gid}, token=author.token)
    pid = decode_global_id(gid, "Post", "id")
    reads = EngagementReads(engine)
    statements = 0

    def count(*_args, **_kwargs) -> None:
        nonlocal statements
        statements += 1

    event.listen(engine.sync_engine, "before_cursor_execute", count)
    try:
        mine, theirs, nobody = await asyncio.gather(
            reads.snapshot(pid, friend.id),
            reads.snapshot(pid, blocked.id),
            reads.snapshot(uuid.uuid4(), friend.id),
        )
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", count)
    assert statements == 1  # one statement for the three requests of this turn
    assert mine is not None and (mine.post.id, mine.likes, mine.comments) == (pid, 0, 0)
    assert theirs is None and nobody is None  # blocked; no such post


def test_gc_policy_freezes_after_arrivals_and_compacts_after_churn():
    import gc

    from app.gc_policy import GcPolicy

    class FakeHub:
        opened_total = closed_total = subscriber_count = 0

    hub = FakeHub()
    policy = GcPolicy(hub, compact_after=100)  # type: ignore[arg-type]
    try:
        assert policy.step() is None  # nothing arrived
        hub.opened_total = hub.subscriber_count = 50
        assert policy.step() == "freeze"
        assert policy.step() is None
        hub.closed_total, hub.subscriber_count = 40, 10
        assert policy.step() is None  # churn below compact_after
        hub.opened_total, hub.closed_total, hub.subscriber_count = 200, 150, 50
        assert policy.step() == "compact"
        assert policy.step() is None
    finally:
        gc.unfreeze()


async def test_hub_subscribes_again_when_its_connection_drops(settings, redis):
    name = f"roost-hub-test-{uuid.uuid4().hex[:8]}"
    own = Redis.from_url(settings.redis_url, client_name=name)
    hub = Hub(own)
    pid = uuid.uuid4()
    publisher = RedisPublisher(redis)
    try:
        async with hub.subscribe(post_channel(pid)) as sub:
            await publisher.engagement_changed(pid)
            assert (await got(sub))["post_id"] == str(pid)
            (conn,) = [
                c for c in await redis.client_list() if c["name"] == name and int(c["sub"]) > 0
            ]
            await redis.execute_command("CLIENT", "KILL", "ID", conn["id"])
            await eventually(lambda: _subscribed(redis, post_channel(pid)))
            await publisher.engagement_changed(pid)
            assert (await got(sub))["post_id"] == str(pid)  # the same subscription lives on
    finally:
        await hub.close()
        await own.aclose()


async def _subscribed(redis, channel) -> bool:
    return await numsub(redis, channel) == 1
