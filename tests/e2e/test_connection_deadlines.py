"""Connection deadlines, the concurrency cap and trusted proxies of an API process
(app/http_server.py), over a real socket: the test app served by uvicorn with the
config ``roost serve`` uses, in this event loop."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
import uvicorn
from redis.asyncio import Redis

from app.asgi import create_app
from app.http_server import LINGER_S, server_config
from tests.support.polling import PATIENCE_S
from tests.support.servers import free_port

#: Short deadlines, so a failing test fails fast and a passing one waits little.
DEADLINES = {
    "api_header_timeout_s": 0.5,
    "api_body_timeout_s": 0.5,
    "api_body_min_rate": 1_000,
    "api_keepalive_timeout_s": 0.5,
}
#: The head of a POST whose 100,000-byte body never comes.
BODY_HEAD = (
    b"POST /graphql HTTP/1.1\r\nHost: roost.test\r\nContent-Type: application/json\r\n"
    b"Content-Length: 100000\r\n\r\n"
)
LOG_IN = """mutation($u: String!, $p: String!) { logIn(input: { username: $u, password: $p }) {
  __typename } }"""


@contextlib.asynccontextmanager
async def served(app: object, settings, **overrides) -> AsyncIterator[int]:
    """Serve ``app`` on a free port with ``server_config`` of ``settings`` + overrides."""
    port = free_port()
    s = settings.model_copy(update={"host": "127.0.0.1", "port": port, **overrides})
    config = server_config(s, app, access_log=False, lifespan="off", timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    try:
        yield port
    finally:
        server.should_exit = True
        await task


async def read_until_closed(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sends until it closes the connection (PATIENCE_S at most)."""
    return await asyncio.wait_for(reader.read(), PATIENCE_S)


async def trickle(writer: asyncio.StreamWriter, data: bytes, reader: asyncio.StreamReader) -> bool:
    """Send ``data`` a byte every 50 ms; True if the server closed the connection first."""
    for byte in data:
        if reader.at_eof() or writer.is_closing():
            return True
        try:
            writer.write(bytes([byte]))
            await writer.drain()
        except ConnectionError:
            return True
        await asyncio.sleep(0.05)
        if reader.at_eof():
            return True
    return False


async def test_a_connection_that_sends_nothing_is_closed(app, settings):
    async with served(app, settings, **DEADLINES) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await read_until_closed(reader) == b""
        writer.close()


async def test_headers_trickled_past_the_deadline_get_408_and_a_close(app, settings):
    head = (
        b"POST /graphql HTTP/1.1\r\nHost: roost.test\r\n"
        + b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 20) for i in range(12))
        + b"\r\n"
    )
    async with served(app, settings, **DEADLINES) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        read = asyncio.create_task(read_until_closed(reader))
        closed_first = await trickle(writer, head, reader)
        answer = await read
        writer.close()
    assert closed_first, "the whole head went through: no header deadline"
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert body["errors"][0]["extensions"]["code"] == "REQUEST_TIMEOUT"


async def test_a_body_trickled_below_the_minimum_rate_is_cut_off(app, settings):
    async with served(app, settings, **DEADLINES) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(BODY_HEAD)
        await writer.drain()
        read = asyncio.create_task(read_until_closed(reader))
        closed_first = await trickle(writer, b'{"query": "' + b" " * 400, reader)
        answer = await read
        writer.close()
    assert closed_first, "the body kept trickling in: no body deadline"
    assert answer.startswith(b"HTTP/1.1 408 "), answer


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (BODY_HEAD, b"408"),  # the body deadline
        (b"POST /graphql HTTP/1.1\r\nHost: roost.test\r\nNot A Header\r\n\r\n", b"400"),
    ],
    ids=["body-deadline", "malformed-head"],
)
async def test_a_client_still_sending_after_the_answer_reads_it_and_is_not_reset(
    app, settings, head, status
):
    """A connection closed while its request is still arriving half-closes and drops what
    still arrives: a client that keeps writing reads the whole answer and its writes are
    not met by a reset."""
    async with served(app, settings, **DEADLINES) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(head)
        await writer.drain()
        answer = await read_until_closed(reader)
        for _ in range(3):
            writer.write(b" " * 20_000)
            await writer.drain()
            await asyncio.sleep(0.05)
        late = await asyncio.wait_for(reader.read(), PATIENCE_S)
        writer.close()
    assert answer.startswith(b"HTTP/1.1 " + status + b" "), answer
    assert late == b""


async def test_a_client_that_keeps_sending_after_the_408_is_cut_off_after_the_linger(app, settings):
    """Lingering is bounded: a client that never ends its stream and keeps writing after
    the 408 finds the connection closed (its writes fail) once LINGER_S has passed."""
    async with served(app, settings, **DEADLINES) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(BODY_HEAD)
        await writer.drain()
        answer = await read_until_closed(reader)
        cut_off = False
        deadline = asyncio.get_running_loop().time() + LINGER_S + PATIENCE_S
        while not cut_off and asyncio.get_running_loop().time() < deadline:
            try:
                writer.write(b" " * 1_000)
                await writer.drain()
            except ConnectionError:
                cut_off = True
            await asyncio.sleep(0.05)
            cut_off = cut_off or writer.is_closing()
        writer.close()
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert cut_off, "the server kept the connection past its linger"


async def test_a_body_at_a_fair_rate_passes_the_deadline(app, settings):
    """The body deadline grows with what arrives: a body sent in pieces over longer than
    API_BODY_TIMEOUT_S, but faster than API_BODY_MIN_RATE, is served."""
    query = json.dumps({"query": "{ __typename }" + " " * 30_000}).encode()
    overrides = {**DEADLINES, "api_body_timeout_s": 0.3, "api_body_min_rate": 20}

    async def pieces() -> AsyncIterator[bytes]:
        for i in range(0, len(query), 5_000):
            yield query[i : i + 5_000]
            await asyncio.sleep(0.1)

    async with served(app, settings, **overrides) as port:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            resp = await client.post(
                "/graphql",
                content=pieces(),
                headers={"content-type": "application/json", "content-length": str(len(query))},
            )
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"data": {"__typename": "Query"}}


async def test_a_kept_alive_connection_serves_then_closes_when_idle(app, settings):
    async with served(app, settings, **DEADLINES) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: roost.test\r\n\r\n")
        await writer.drain()
        answer = await read_until_closed(reader)
        writer.close()
    assert answer.startswith(b"HTTP/1.1 200 "), answer


async def test_requests_past_the_concurrency_cap_get_a_json_503(app, settings):
    async with served(app, settings, api_limit_concurrency=2) as port:
        # Two idle connections fill the cap; a third's request is refused.
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            resp = await client.post("/graphql", json={"query": "{ __typename }"})
        for _, writer in held:
            writer.close()
    assert resp.status_code == 503
    assert resp.headers["retry-after"] == "1"
    assert resp.json()["errors"][0]["extensions"]["code"] == "SERVICE_UNAVAILABLE"


# --- trusted proxies ----------------------------------------------------------------------


@pytest.fixture
async def limited_app(settings, engine):
    """The app with a sign-in budget of two per client address."""
    return create_app(
        settings.model_copy(update={"rate_limit_enabled": True, "rate_limit_auth": 2}),
        engine=engine,
    )


def loopback() -> str:
    """A loopback address of its own (127.x.y.z), so the budget is this test's."""
    return "127." + ".".join(str(random.randint(2, 254)) for _ in range(3))


async def log_ins_from(port: int, source: str, forwarded: list[str]) -> list[int]:
    """Status of one failed logIn per X-Forwarded-For value, sent from ``source``."""
    transport = httpx.AsyncHTTPTransport(local_address=source)
    wrong = {"u": "nobody_" + uuid.uuid4().hex[:8], "p": "wrong password"}
    statuses = []
    async with httpx.AsyncClient(
        transport=transport, base_url=f"http://127.0.0.1:{port}"
    ) as client:
        for ip in forwarded:
            resp = await client.post(
                "/graphql",
                json={"query": LOG_IN, "variables": wrong},
                headers={"X-Forwarded-For": ip},
            )
            statuses.append(resp.status_code)
    return statuses


def addresses(n: int) -> list[str]:
    a, b = random.randint(1, 254), random.randint(1, 254)
    return [f"10.{a}.{b}.{i}" for i in range(n)]


async def test_x_forwarded_for_is_not_trusted_by_default(limited_app, settings):
    """A same-host client cannot pick its rate-limit identity with X-Forwarded-For."""
    source = "127.0.0.1"  # uvicorn alone trusts it
    redis = Redis.from_url(settings.redis_url)
    try:
        await redis.delete(f"roost:rl:{{ip:{source}}}:auth")
    finally:
        await redis.aclose()
    async with served(limited_app, settings) as port:
        statuses = await log_ins_from(port, source, addresses(3))
    assert statuses == [200, 200, 429]


async def test_x_forwarded_for_of_a_trusted_proxy_is_the_client(limited_app, settings):
    source = loopback()
    async with served(limited_app, settings, forwarded_allow_ips=source) as port:
        statuses = await log_ins_from(port, source, addresses(3))
    assert statuses == [200, 200, 200]
    # ... and each forwarded client has its own budget of two.
    redis = Redis.from_url(settings.redis_url)
    try:
        assert not await redis.exists(f"roost:rl:{{ip:{source}}}:auth")
    finally:
        await redis.aclose()
