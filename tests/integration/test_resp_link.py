"""adapters.resp_link on a real Redis: replies come back in order with error replies as
values, a pooled connection is reused only when its batch was read to the end (a
cancelled or timed-out batch disconnects it, so no later caller reads a stale reply),
connections the server dropped while idle are replaced, and a lost server fails as redis-py's
ConnectionError."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError, NoScriptError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from adapters.resp_link import AutoPipeline, RespBatch, round_trip
from bench._support import dedicated_redis

ECHO = "return ARGV[1]"
#: Busy for about ARGV[1] ms (Lua has no sleep), then returns ARGV[2].
BUSY = """
local t = redis.call('TIME')
local stop = tonumber(t[1]) * 1000000 + tonumber(t[2]) + tonumber(ARGV[1]) * 1000
repeat t = redis.call('TIME') until tonumber(t[1]) * 1000000 + tonumber(t[2]) > stop
return ARGV[2]
"""


@pytest.fixture
async def redis(settings):
    client = Redis.from_url(settings.redis_url, socket_timeout=2)
    yield client
    await client.aclose()


async def sha(redis: Redis, source: str) -> str:
    return await redis.script_load(source)


async def execute(client: Redis, b: RespBatch) -> list:
    """:func:`round_trip` of one batch: its replies."""
    replies, _ = await round_trip(client, b"".join(b.parts), len(b.parts))
    return replies


def batch(*calls: tuple[str, int, tuple]) -> RespBatch:
    b = RespBatch()
    for sha_, numkeys, args in calls:
        b.evalsha(sha_, numkeys, *args)
    return b


async def test_replies_come_back_in_order_with_errors_as_values(redis):
    echo = await sha(redis, ECHO)
    missing = "0" * 40
    fails = await sha(redis, "return redis.error_reply('WRONG no')")
    replies = await execute(
        redis, batch((echo, 0, ("a",)), (missing, 0, ()), (fails, 0, ()), (echo, 0, (7,)))
    )
    assert replies[0] == b"a" and replies[3] == b"7"
    assert isinstance(replies[1], NoScriptError)
    assert isinstance(replies[2], ResponseError) and "WRONG" in str(replies[2])
    assert await AutoPipeline(redis).execute(RespBatch()) == []  # nothing to send


async def test_a_cancelled_batch_drops_its_connection_and_the_next_reads_its_own_reply(redis):
    busy, echo = await sha(redis, BUSY), await sha(redis, ECHO)
    await execute(redis, batch((echo, 0, ("warm",))))  # one idle connection
    slow = asyncio.create_task(execute(redis, batch((busy, 0, (300, "stale")))))
    await asyncio.sleep(0.05)
    slow.cancel()
    with pytest.raises(asyncio.CancelledError):
        await slow
    for n in range(20):  # the stale reply arrives meanwhile: nobody may read it
        assert await execute(redis, batch((echo, 0, (n,)))) == [str(n).encode()]


async def test_a_slow_reply_raises_redis_timeout_and_the_next_batch_is_served(settings):
    client = Redis.from_url(settings.redis_url, socket_timeout=0.1)
    busy, echo = await sha(client, BUSY), await sha(client, ECHO)
    with pytest.raises(RedisTimeoutError):
        await execute(client, batch((busy, 0, (400, "late"))))
    await asyncio.sleep(0.4)  # the busy script ends
    assert await execute(client, batch((echo, 0, ("ok",)))) == [b"ok"]
    await client.aclose()


async def test_concurrent_batches_each_get_their_own_replies(redis):
    echo = await sha(redis, ECHO)
    tags = [uuid.uuid4().hex for _ in range(200)]
    replies = await asyncio.gather(
        *(execute(redis, batch((echo, 0, (t,)), (echo, 0, (t,)))) for t in tags)
    )
    assert replies == [[t.encode(), t.encode()] for t in tags]
    pool = redis.connection_pool
    assert not pool._in_use_connections  # every connection went back to the pool


async def test_dropped_idle_connections_are_replaced_and_a_lost_server_is_a_connection_error():
    with dedicated_redis() as url:
        client = Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
        admin = Redis.from_url(url)
        echo = await sha(client, ECHO)
        await asyncio.gather(*(execute(client, batch((echo, 0, (n,)))) for n in range(3)))
        killed = await admin.client_kill_filter(_type="normal", skipme=True)
        assert killed >= 1  # the pool's idle connections among them
        await asyncio.sleep(0.05)  # their end of stream reaches the event loop
        assert await execute(client, batch((echo, 0, ("again",)))) == [b"again"]
        await admin.shutdown(nosave=True)
        with pytest.raises(ConnectionError):
            await execute(client, batch((echo, 0, ("down",))))
        await client.aclose()
        await admin.aclose()


# --- AutoPipeline: one shared connection, batches of one loop turn in one write --------


async def test_concurrent_batches_share_writes_and_each_gets_its_own_replies(redis):
    pipeline = AutoPipeline(redis)
    echo = await sha(redis, ECHO)
    tags = [uuid.uuid4().hex for _ in range(300)]
    sizes = [1 + i % 3 for i in range(len(tags))]
    replies = await asyncio.gather(
        *(pipeline.execute(batch(*[(echo, 0, (t,))] * k)) for t, k in zip(tags, sizes, strict=True))
    )
    assert replies == [[t.encode()] * k for t, k in zip(tags, sizes, strict=True)]
    assert 1 <= pipeline.writes < 10  # queued in one turn: coalesced
    assert await pipeline.execute(batch((echo, 0, ("after",)))) == [b"after"]
    await pipeline.aclose()


async def test_a_cancelled_caller_leaves_the_others_their_own_replies(redis):
    pipeline = AutoPipeline(redis)
    busy, echo = await sha(redis, BUSY), await sha(redis, ECHO)
    slow = asyncio.create_task(pipeline.execute(batch((busy, 0, (200, "dropped")))))
    await asyncio.sleep(0.02)
    behind = [asyncio.create_task(pipeline.execute(batch((echo, 0, (n,))))) for n in range(5)]
    await asyncio.sleep(0.02)
    slow.cancel()
    with pytest.raises(asyncio.CancelledError):
        await slow
    assert await asyncio.gather(*behind) == [[str(n).encode()] for n in range(5)]
    assert await pipeline.execute(batch((echo, 0, ("next",)))) == [b"next"]
    await pipeline.aclose()


async def test_a_timeout_fails_what_is_in_flight_and_the_next_batch_reconnects(settings):
    client = Redis.from_url(settings.redis_url, socket_timeout=0.1)
    pipeline = AutoPipeline(client)
    busy, echo = await sha(client, BUSY), await sha(client, ECHO)
    slow = asyncio.create_task(pipeline.execute(batch((busy, 0, (400, "late")))))
    await asyncio.sleep(0.01)
    behind = asyncio.create_task(pipeline.execute(batch((echo, 0, ("behind",)))))
    with pytest.raises(RedisTimeoutError):
        await slow
    with pytest.raises(RedisTimeoutError):  # its reply is queued behind the slow one
        await behind
    await asyncio.sleep(0.4)  # the busy script ends
    assert await pipeline.execute(batch((echo, 0, ("ok",)))) == [b"ok"]
    await pipeline.aclose()
    await client.aclose()


async def test_a_dropped_connection_is_replaced_and_a_lost_server_fails_at_once():
    with dedicated_redis() as url:
        client = Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
        admin = Redis.from_url(url)
        pipeline = AutoPipeline(client)
        echo = await sha(client, ECHO)
        assert await pipeline.execute(batch((echo, 0, ("up",)))) == [b"up"]
        assert await admin.client_kill_filter(_type="normal", skipme=True) >= 1
        await asyncio.sleep(0.05)  # the end of stream reaches the event loop
        assert await pipeline.execute(batch((echo, 0, ("again",)))) == [b"again"]
        clients = await admin.client_list()
        assert len(clients) == 2  # admin and the pipeline's one connection
        await admin.shutdown(nosave=True)
        started = asyncio.get_running_loop().time()
        for _ in range(3):  # in flight, then refused at connect: never a hang
            with pytest.raises(ConnectionError):
                await pipeline.execute(batch((echo, 0, ("down",))))
        assert asyncio.get_running_loop().time() - started < 3
        await pipeline.aclose()
        await client.aclose()
        await admin.aclose()


async def test_closing_the_pipeline_closes_its_connection(redis, settings):
    name = f"pl-{uuid.uuid4().hex[:8]}"
    client = Redis.from_url(settings.redis_url, client_name=name)  # the pipeline's only
    pipeline = AutoPipeline(client)
    echo = await sha(redis, ECHO)

    async def named() -> int:
        return sum(c.get("name") == name for c in await redis.client_list())

    await asyncio.gather(*(pipeline.execute(batch((echo, 0, (n,)))) for n in range(20)))
    assert await named() == 1
    await pipeline.aclose()
    await asyncio.sleep(0.05)
    assert await named() == 0
    await client.aclose()


def test_a_pipeline_used_from_a_new_event_loop_opens_its_own_connection(settings):
    client = Redis.from_url(settings.redis_url)
    pipeline = AutoPipeline(client)

    async def once(tag: str) -> list[bytes]:
        echo = await Redis.from_url(settings.redis_url).script_load(ECHO)
        return await pipeline.execute(batch((echo, 0, (tag,))))

    assert asyncio.run(once("first")) == [b"first"]
    assert asyncio.run(once("second")) == [b"second"]  # the first loop is closed


@pytest.mark.parametrize("when", ["queued", "connecting"])
async def test_closing_fails_what_waits_at_once_and_leaves_no_connection(redis, settings, when):
    name = f"pl-{uuid.uuid4().hex[:8]}"
    client = Redis.from_url(settings.redis_url, client_name=name, socket_timeout=5)
    pipeline = AutoPipeline(client)
    echo = await sha(redis, ECHO)
    waiting = asyncio.create_task(pipeline.execute(batch((echo, 0, ("x",)))))
    await asyncio.sleep(0)  # queued; its flush is due at the end of this turn
    if when == "connecting":
        await asyncio.sleep(0)  # the flush has started the connect, not yet run
    started = asyncio.get_running_loop().time()
    await pipeline.aclose()
    with pytest.raises(ConnectionError):
        await waiting
    assert asyncio.get_running_loop().time() - started < 1  # at once, not at the timeout
    with pytest.raises(ConnectionError):
        await pipeline.execute(batch((echo, 0, ("later",))))
    await asyncio.sleep(0.1)
    assert not any(c.get("name") == name for c in await redis.client_list())
    await client.aclose()
