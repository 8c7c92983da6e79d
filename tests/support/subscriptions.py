"""Subscriptions over real WebSockets: a local server, live subscriptions, counts."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator

import redis as redis_sync
import uvicorn
from redis.asyncio import Redis

from app.asgi import create_app
from domain.realtime import (
    ONLINE_KEY,
)
from tests.support.polling import PATIENCE_S
from tests.support.ws import LEGACY_WS, TRANSPORT_WS, free_port


@contextlib.asynccontextmanager
async def local_server(settings, engine, **overrides):
    """The app served by uvicorn in this event loop (its tasks and objects are visible
    here), with its own hub; yields (app, WebSocket URL)."""
    app = create_app(settings.model_copy(update=overrides), engine=engine)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    serving = asyncio.create_task(server.serve())
    try:
        while True:
            if server.started:
                break
            await asyncio.sleep(0.02)
        yield app, f"ws://127.0.0.1:{port}/graphql"
    finally:
        server.should_exit = True
        await serving


def server_tasks() -> int:
    """Tasks of this loop that are not the arq worker's (it runs in-process)."""
    n = 0
    for task in asyncio.all_tasks():
        code = getattr(task.get_coro(), "cr_code", None)
        name = code.co_filename if code else ""
        if "/arq/" not in name and "workers/" not in name:
            n += 1
    return n


async def live(redis: Redis, channel: str, *, online: uuid.UUID | None = None) -> None:
    """Wait until some process subscribes ``channel`` (and ``online`` is present)."""
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        ((_, n),) = await redis.pubsub_numsub(channel)
        score = await redis.zscore(ONLINE_KEY, str(online)) if online else 1
        if n and score:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{channel} never subscribed")


PROTOCOLS = [TRANSPORT_WS, LEGACY_WS]


@contextlib.asynccontextmanager
async def served(settings, engine, **overrides) -> AsyncIterator[str]:
    """An API served by uvicorn in this event loop; yields its WebSocket URL."""
    api = create_app(settings.model_copy(update=overrides), engine=engine)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(api, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    serving = asyncio.create_task(server.serve())
    try:
        while True:
            if server.started:
                break
            await asyncio.sleep(0.02)
        yield f"ws://127.0.0.1:{port}/graphql"
    finally:
        server.should_exit = True
        await serving


def subscribers(cluster, channel: str) -> int:
    """Subscribers of ``channel`` over every master, sharded or not."""
    total = 0
    for node in cluster.nodes:
        host, port = node.rsplit(":", 1)
        client = redis_sync.Redis(host=host, port=int(port), socket_timeout=5)
        try:
            for command in ("NUMSUB", "SHARDNUMSUB"):
                try:
                    _, n = client.execute_command("PUBSUB", command, channel)
                except redis_sync.ResponseError:  # no SHARDNUMSUB before Redis 7
                    continue
                total += int(n)
        except redis_sync.ConnectionError:
            continue
        finally:
            client.close()
    return total
