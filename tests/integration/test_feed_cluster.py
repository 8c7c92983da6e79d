"""The feed store on a real Redis Cluster of three masters (tests/support/stores.py): one round
trip per master, every script inside one slot, a flushed master, a killed master, and
slots that move between masters while batches run.

Test settings: pull at >= 40 followers, fan-out pages of 7.
"""

from __future__ import annotations

import datetime as dt
import uuid

import redis as redis_sync
from redis.asyncio import Redis

from adapters.feedstore import FeedRedis
from adapters.feedstore.timelines import RedisTimelines
from domain import metrics
from domain.db import new_id
from domain.feed.read_feed import read_home_feed
from domain.feed.timelines import Entry
from domain.outbox.process import list_dead_letters
from tests.support.actions import feed_captions, follow_all, post
from tests.support.checks import in_cached_feed
from tests.support.polling import eventually


def _node_client(node: str) -> redis_sync.Redis:
    host, port = node.rsplit(":", 1)
    return redis_sync.Redis(host=host, port=int(port), socket_timeout=5)


def _entries(n: int) -> list[Entry]:
    base = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    return [Entry.of(base + dt.timedelta(seconds=i), new_id()) for i in range(n)]


class _RoundTrips:
    """Counts the round trips a FeedRedis makes: (node, commands) each."""

    def __init__(self, store: FeedRedis) -> None:
        self.store = store
        self.sent: list[tuple[object, int]] = []
        self._round_trip = store._round_trip

    async def __aenter__(self):
        async def counted(node, data, n):
            self.sent.append((node, n))
            return await self._round_trip(node, data, n)

        self.store._round_trip = counted  # type: ignore[method-assign]
        return self

    async def __aexit__(self, *exc) -> None:
        del self.store._round_trip


async def test_cluster_page_is_one_round_trip_per_master_and_one_script_call_per_slot(
    cluster_env, single_env
):
    store = cluster_env.redis
    tl = RedisTimelines(store, f"rt{uuid.uuid4().hex[:6]}", max_len=20, ttl=dt.timedelta(days=1))
    owners = [uuid.uuid4() for _ in range(200)]
    await tl.create_empty(owners[:150])  # 50 have no timeline: skipped, not created
    warm, entry = _entries(2)
    assert await tl.add(owners, [warm]) == 150  # loads the scripts on every master
    async with _RoundTrips(store) as trips:
        assert await tl.add(owners, [entry]) == 150
    keys = [tl.key(o) for o in owners]
    # First round: one round trip per master, one script call per owner (a script over
    # keys of several slots is refused: CROSSSLOT); second round, for the 50 missing
    # owners (add to a rebuild in progress, if any): again one round trip per master.
    first, second = trips.sent[:3], trips.sent[3:]
    assert len({node for node, _ in first}) == 3
    assert sum(n for _, n in first) == len(owners)
    assert len(second) <= 3 and sum(n for _, n in second) == len(store.slot_groups(keys[150:]))
    for o in owners:
        exists = await store.client.exists(tl.key(o))
        assert exists == (o in owners[:150])
    # ... and on one Redis the same page is a single script call.
    single = RedisTimelines(single_env.redis, tl.prefix, max_len=20, ttl=dt.timedelta(days=1))
    await single.create_empty(owners[:3])
    assert await single.add(owners[:3], [warm]) == 3  # the script is loaded
    async with _RoundTrips(single_env.redis) as trips:
        assert await single.add(owners[:3], [entry]) == 3
    assert trips.sent == [(None, 1)]
    await single_env.redis.client.delete(*(single.key(o) for o in owners[:3]))


async def test_cluster_flushall_and_script_flush_of_one_master_lose_nothing(cluster_env):
    env = cluster_env
    (author,) = await env.make_users(1)
    fans = await env.make_users(12)
    await follow_all(env.gql, fans, author)
    await env.worker.drain()
    for f in fans:
        await feed_captions(env.gql, f)
    for i in range(3):
        await post(env.gql, author, f"before{i}")
    await env.worker.drain()
    await env.redis.ready()
    victim = env.redis.node_of(env.stores.feeds.key(fans[0].id))
    on_victim = [f for f in fans if env.redis.node_of(env.stores.feeds.key(f.id)) == victim]
    node = _node_client(victim)
    try:
        node.flushall()
        node.script_flush()  # a restarted master has no scripts either: NOSCRIPT
    finally:
        node.close()
    for f in on_victim:
        assert not await env.stores.feeds.exists(f.id)
    letters = len(await list_dead_letters(env.engine))
    pid = await post(env.gql, author, "after")
    await env.worker.drain()
    for f in fans:
        assert await feed_captions(env.gql, f) == ["after", "before2", "before1", "before0"]
        assert await in_cached_feed(env.stores, f, pid) is True  # pushed or rebuilt
    assert len(await list_dead_letters(env.engine)) == letters  # the job succeeded


async def test_cluster_killed_master_serves_its_users_from_postgres_and_loses_nothing(
    cluster_env,
):
    """A master dies (SIGKILL, no replica): its users' pages come from PostgreSQL, the
    others' from Redis; a post made meanwhile reaches every live feed at once, and its
    event waits (Redis unavailable: never a dead letter) until the master is back; the
    master returns empty and its users' feeds are rebuilt with every post."""
    env = cluster_env
    (author,) = await env.make_users(1)
    fans = await env.make_users(15)
    await follow_all(env.gql, fans, author)
    await env.worker.drain()
    for f in fans:
        await feed_captions(env.gql, f)
    await post(env.gql, author, "p1")
    await env.worker.drain()
    await env.redis.ready()
    victim = env.redis.node_of(env.stores.feeds.key(fans[0].id))
    index = env.cluster.nodes.index(victim)
    on_victim = {f.id for f in fans if env.redis.node_of(env.stores.feeds.key(f.id)) == victim}
    assert 0 < len(on_victim) < len(fans)

    async def page(user) -> tuple[list[uuid.UUID], str]:
        async def visible(batch):
            return [True] * len(batch)

        got = await read_home_feed(
            env.engine,
            env.stores,
            env.settings.feed_config,
            user.id,
            first=10,
            before=None,
            visible=visible,
        )
        return [e.post_id for e in got.entries], got.source

    env.cluster.kill(index)
    counting = _CountingFallbacks(metrics.current())
    metrics.install(counting)
    try:
        for f in fans:
            assert await feed_captions(env.gql, f) == ["p1"]
            _, source = await page(f)
            assert source == ("postgres" if f.id in on_victim else "redis"), f
        assert counting.fallbacks == 2 * len(on_victim)  # two reads each

        p2 = await post(env.gql, author, "p2")
        live = [f for f in fans if f.id not in on_victim]

        async def pushed() -> bool:  # the job's first attempt wrote every reachable feed
            return all([await in_cached_feed(env.stores, f, p2) for f in live])

        await eventually(pushed)
        for f in fans:
            assert await feed_captions(env.gql, f) == ["p2", "p1"]
    finally:
        metrics.install(counting.inner)
        env.cluster.restart(index)
    # The job met a feed store that did not answer: an outage, so the event waited
    # (retried, then re-driven by the relay) instead of becoming a dead letter.
    await env.worker.drain(within=60)
    assert [d for d in await list_dead_letters(env.engine) if d.topic == "post.created"] == []
    for f in fans:  # the master is back, empty: rebuilt from PostgreSQL, nothing lost
        assert await feed_captions(env.gql, f) == ["p2", "p1"]
        ids, source = await page(f)
        assert source == "redis" and len(ids) == 2


def _local(port: int) -> redis_sync.Redis:
    return redis_sync.Redis(host="127.0.0.1", port=port, socket_timeout=5)


class _CountingFallbacks:
    """The installed metrics, counting the feed pages served from PostgreSQL."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.fallbacks = 0

    def feed_fallback(self) -> None:
        self.fallbacks += 1
        self.inner.feed_fallback()

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


def _ids(port: int) -> str:
    client = _local(port)
    try:
        return client.execute_command("CLUSTER", "MYID").decode()
    finally:
        client.close()


def _ports(cluster) -> list[int]:
    return [int(n.rsplit(":", 1)[1]) for n in cluster.nodes]


def _migrate_slot(cluster, slot: int, src: int, dst: int, *, finish: bool) -> None:
    """Move ``slot`` from master ``src`` to master ``dst`` (ports) the way redis-cli
    --cluster reshard does: IMPORTING/MIGRATING, MIGRATE its keys, then (``finish``)
    SETSLOT NODE on every master."""
    s, d = _local(src), _local(dst)
    try:
        d.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", _ids(src))
        s.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", _ids(dst))
        while keys := s.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100):
            s.execute_command("MIGRATE", "127.0.0.1", dst, "", 0, 5000, "KEYS", *keys)
        if finish:
            others = [p for p in _ports(cluster) if p not in (src, dst)]
            for port in (dst, src, *others):
                node = _local(port)
                try:
                    node.execute_command("CLUSTER", "SETSLOT", slot, "NODE", _ids(dst))
                finally:
                    node.close()
    finally:
        s.close()
        d.close()


async def test_cluster_batches_follow_a_slot_moving_to_another_master(cluster_env):
    """ASK while a slot migrates, MOVED once it has moved: the batch still writes every
    key, on the master that owns it now. A read on the new master takes the timeline
    for missing (its stamp is of the old master's run); back on the old one, it reads."""
    store: FeedRedis = cluster_env.redis
    tl = RedisTimelines(store, f"mv{uuid.uuid4().hex[:6]}", max_len=20, ttl=dt.timedelta(days=1))
    owner, other = uuid.uuid4(), uuid.uuid4()
    await tl.create_empty([owner, other])
    await store.ready()  # the map is known
    slot = store.client.keyslot(tl.key(owner))
    src = int(store.node_of(tl.key(owner)).rsplit(":", 1)[1])
    dst = next(p for p in _ports(cluster_env.cluster) if p != src)
    e1, e2, e3 = _entries(3)
    try:
        _migrate_slot(cluster_env.cluster, slot, src, dst, finish=False)
        assert await tl.add([owner, other], [e1]) == 2  # ASK -> ASKING on dst
        _migrate_slot(cluster_env.cluster, slot, src, dst, finish=True)
        assert await tl.add([owner, other], [e2]) == 2  # MOVED -> new map
        assert store.node_of(tl.key(owner)).endswith(f":{dst}")
        held = await store.client.zrange(tl.key(owner), 0, -1, withscores=True)
        assert [(m, int(s)) for m, s in held[1:]] == [(e.member, e.score) for e in (e1, e2)]
        # Built by another server's run (src's): read as missing, so rebuilt on read (a
        # slot that moved is trusted no more than a node that restarted).
        assert (await tl.page([owner, other], None, 10))[0] is None
    finally:
        _migrate_slot(cluster_env.cluster, slot, dst, src, finish=True)
    assert await tl.add([owner], [e3]) == 1
    (page,) = await tl.page([owner], None, 10)
    assert page == [e3, e2, e1]
    fresh = Redis(host="127.0.0.1", port=src)
    try:
        assert await fresh.zcard(tl.key(owner)) == 4
    finally:
        await fresh.aclose()
