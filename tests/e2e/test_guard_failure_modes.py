"""Each HTTP guard fails the way docs/api/limits.md "When Redis fails" says when Redis is
slow: a real redis-server of the test's own, paused with ``CLIENT PAUSE`` (every client
waits, longer than ``GUARD_REDIS_TIMEOUT_MS``).

- The sign-in budget fails closed: ``logIn`` is refused ``RATE_LIMITED`` with
  ``Retry-After`` (never checked against no budget), counted in
  ``roost_http_guard_fail_closed_total{guard="signin"}``.
- The request budget fails open: a query is served, counted in
  ``roost_http_guard_fail_open_total{guard="ratelimit"}``.
"""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator

import httpx
import pytest
from prometheus_client import REGISTRY
from redis.asyncio import Redis

from app.asgi import create_app
from app.embedded import redis_server_binary
from app.embedded.redis import _ping
from tests.support.documents import LOG_IN
from tests.support.polling import PATIENCE_S
from tests.support.servers import free_port
from tests.support.users import TEST_PASSWORD


@pytest.fixture(scope="module")
def own_redis() -> AsyncIterator[str]:
    with tempfile.TemporaryDirectory(prefix="roost-guards-") as folder:
        port = free_port()
        proc = subprocess.Popen(
            [
                *(str(redis_server_binary()), "--bind", "127.0.0.1", "--port", str(port)),
                *("--dir", folder, "--save", "", "--appendonly", "no"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"redis://127.0.0.1:{port}/0"
        try:
            deadline = time.monotonic() + PATIENCE_S
            while not _ping(url, timeout=0.2):
                assert time.monotonic() < deadline and proc.poll() is None, "no redis-server"
                time.sleep(0.05)
            yield url
        finally:
            proc.terminate()
            proc.wait(15)


def _count(metric: str, guard: str) -> float:
    return REGISTRY.get_sample_value(metric, {"guard": guard}) or 0.0


async def test_a_slow_redis_refuses_sign_in_and_serves_the_rest(
    own_redis, settings, engine, make_users
) -> None:
    (user,) = await make_users(1)
    own = settings.model_copy(
        update={
            "redis_url": own_redis,
            "rate_limit_enabled": True,
            "rate_limit_requests": 1000,
            "rate_limit_mutations": 1000,
            "rate_limit_auth": 1000,
            "guard_redis_timeout_ms": 200,
        }
    )
    app = create_app(own, engine=engine)
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 40_000))
    admin = Redis.from_url(own_redis)
    log_in = {"query": LOG_IN, "variables": {"u": user.username, "p": TEST_PASSWORD}}
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://roost.test") as http:
            ok = await http.post("/graphql", json=log_in)
            assert ok.json()["data"]["logIn"]["__typename"] == "LogInSuccess", ok.text
            closed = _count("roost_http_guard_fail_closed_total", "signin")
            opened = _count("roost_http_guard_fail_open_total", "ratelimit")
            # Every client waits 3 s (this one too: the pause runs out by itself).
            await admin.execute_command("CLIENT", "PAUSE", 3000, "ALL")
            refused = await http.post("/graphql", json=log_in)
            assert refused.status_code == 429, refused.text
            assert int(refused.headers["Retry-After"]) >= 1
            (error,) = refused.json()["errors"]
            assert error["extensions"]["code"] == "RATE_LIMITED"
            assert error["extensions"]["budget"] == "auth"
            assert _count("roost_http_guard_fail_closed_total", "signin") == closed + 1
            served = await http.post("/graphql", json={"query": "{ __typename }"})
            assert served.json() == {"data": {"__typename": "Query"}}
            assert _count("roost_http_guard_fail_open_total", "ratelimit") > opened
            assert await admin.ping()  # answered once the pause is over
            await asyncio.sleep(1.1)  # the guards leave a failed Redis alone for a second
            again = await http.post("/graphql", json=log_in)
            assert again.json()["data"]["logIn"]["__typename"] == "LogInSuccess", again.text
    finally:
        await admin.aclose()
