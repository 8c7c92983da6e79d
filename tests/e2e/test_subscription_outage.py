"""A PostgreSQL outage while a subscription's event is read, on both WebSocket
protocols, against a real server (uvicorn) on a PostgreSQL of the test's own that is
stopped for real (``pg_ctl stop``):

- a blip (the server back within the retries) keeps the subscription: the event
  arrives once PostgreSQL is back, and later ones too;
- a longer outage ends it with a masked ``SERVICE_UNAVAILABLE`` and ``complete``, never
  ``BAD_USER_INPUT`` with an operating-system message.
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from redis.asyncio import Redis

from adapters.feedstore.publisher import RedisPublisher
from app.database import create_engine
from app.embedded import EmbeddedPostgres, ensure_database
from app.migrate import upgrade
from domain.realtime import user_channel
from schema.ids import decode_global_id
from schema.realtime.events import EVENT_RETRY_S
from tests.support.actions import follow_all, post
from tests.support.documents import FEED_SUB
from tests.support.graphql import GQL
from tests.support.subscriptions import PROTOCOLS, live, local_server
from tests.support.users import user_maker
from tests.support.ws import TRANSPORT_WS, WSClient


@pytest.fixture(scope="module")
async def outage_env(settings) -> AsyncIterator[tuple]:
    with tempfile.TemporaryDirectory(prefix="roost-sub-outage-") as folder:
        pg = EmbeddedPostgres(Path(folder) / "postgres")
        await asyncio.to_thread(pg.start)
        try:
            url = pg.url("roost")
            await ensure_database(url)
            await asyncio.to_thread(upgrade, url)
            own = settings.model_copy(update={"database_url": url, "gc_freeze": False})
            engine = create_engine(url, pool_size=3, max_overflow=2, connect_timeout_s=1.0)
            redis = Redis.from_url(own.redis_url)
            try:
                async with local_server(own, engine) as (_app, ws_url):
                    http = ws_url.replace("ws://", "http://").removesuffix("/graphql")
                    # No keep-alive: uvicorn closes idle connections after 5 s.
                    limits = httpx.Limits(max_keepalive_connections=0)
                    async with httpx.AsyncClient(base_url=http, limits=limits) as client:
                        yield pg, own, engine, redis, ws_url, GQL(client)
            finally:
                await redis.aclose()
                await engine.dispose()
        finally:
            await asyncio.to_thread(pg.stop)


async def _subscribed(env, protocol):
    _pg, own, engine, redis, ws_url, gql = env
    author, fan = await user_maker(engine, own)(2)
    await follow_all(gql, [fan], author)
    gid = await post(gql, author, f"seen after the blip {uuid.uuid4().hex[:6]}")
    ws = await WSClient.open(ws_url, protocol, fan.token)
    op = await ws.subscribe(FEED_SUB)
    await live(redis, user_channel(fan.id), online=fan.id)
    return ws, op, author, fan, gid


async def _restart(pg, engine) -> None:
    await asyncio.to_thread(pg.start)
    await engine.dispose()


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_postgres_blip_keeps_the_subscription(outage_env, protocol) -> None:
    pg, _own, engine, redis, _ws_url, gql = outage_env
    ws, _op, author, fan, gid = await _subscribed(outage_env, protocol)
    publisher = RedisPublisher(redis)
    try:
        await asyncio.to_thread(pg.stop)
        try:
            await publisher.feed_item(decode_global_id(gid, "Post", "postId"), author.id, [fan.id])
            await ws.nothing(within=EVENT_RETRY_S[0] + EVENT_RETRY_S[1])  # still trying
        finally:
            await _restart(pg, engine)
        got = await ws.next()
        assert "errors" not in got, got
        assert got["data"]["feedItemAdded"]["id"] == gid
        # The stream goes on.
        gid2 = await post(gql, author, "and the next one")
        await publisher.feed_item(decode_global_id(gid2, "Post", "postId"), author.id, [fan.id])
        assert (await ws.next())["data"]["feedItemAdded"]["id"] == gid2
    finally:
        await ws.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_long_outage_ends_the_subscription_unavailable(outage_env, protocol) -> None:
    pg, _own, engine, redis, _ws_url, _gql = outage_env
    ws, op, author, fan, gid = await _subscribed(outage_env, protocol)
    publisher = RedisPublisher(redis)
    try:
        await asyncio.to_thread(pg.stop)
        try:
            await publisher.feed_item(decode_global_id(gid, "Post", "postId"), author.id, [fan.id])
            got = await ws.next(within=sum(EVENT_RETRY_S) + 30)
        finally:
            await _restart(pg, engine)
        (error,) = got["errors"]
        assert error["extensions"]["code"] == "SERVICE_UNAVAILABLE", got
        assert error["extensions"]["dependency"] == "postgres"
        assert "Errno" not in error["message"] and "retry" in error["message"]
        done = await ws.message()
        assert done == {"id": op, "type": "complete"}, done
        if protocol == TRANSPORT_WS:
            await ws.nothing()
    finally:
        await ws.close()
