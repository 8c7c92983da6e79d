"""What a client sends is bounded before anything parses it (app/request_body.py): body
size (413, Content-Length and chunked), query string (414), UTF-8 and JSON nesting (400
BAD_REQUEST), the same on WebSocket messages of both protocols, and a 10 MB document
leaves no memory behind in a real API process."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from app.asgi import create_app
from tests.support.subscriptions import PROTOCOLS, local_server
from tests.support.ws import TRANSPORT_WS, WSClient, start_api

LIMIT = 1_048_576  # MAX_REQUEST_BYTES's default
TYPENAME = {"query": "{ __typename }"}


def refused(resp: httpx.Response, status: int, code: str) -> str:
    """The message of a house-shaped refusal with ``status`` and ``code``."""
    assert resp.status_code == status, (resp.status_code, resp.text[:300])
    assert resp.headers["content-type"].startswith("application/"), resp.headers
    assert resp.headers.get("x-request-id"), resp.headers
    body = resp.json()
    assert "data" not in body
    (error,) = body["errors"]
    assert error["extensions"]["code"] == code, body
    return error["message"]


def nested(depth: int) -> str:
    """JSON text of an object whose ``v`` nests arrays: ``depth`` containers in all
    (written by hand: the standard library's encoder recurses)."""
    return '{"v":' + "[" * (depth - 1) + "1" + "]" * (depth - 1) + "}"


def post_json(client, text: str):
    return client.post("/graphql", content=text, headers={"content-type": "application/json"})


async def test_invalid_utf8_is_bad_request(client):
    body = b'{"query":"{ user(username:\\"\xff\xfe\\"){ id } }"}'
    resp = await client.post("/graphql", content=body, headers={"content-type": "application/json"})
    assert "UTF-8" in refused(resp, 400, "BAD_REQUEST")
    # a JSON escape of a lone surrogate is no better
    resp = await client.post(
        "/graphql",
        content=b'{"query":"{ user(username:\\"\\ud800\\"){ id } }"}',
        headers={"content-type": "application/json"},
    )
    assert "surrogate" in refused(resp, 400, "BAD_REQUEST")
    # the same connection goes on serving
    assert (await client.post("/graphql", json=TYPENAME)).json() == {
        "data": {"__typename": "Query"}
    }


@pytest.mark.parametrize("depth", [33, 990, 5000])
async def test_deep_json_is_bad_request(client, depth):
    query = json.dumps("query($v: String) { __typename }")
    resp = await post_json(client, f'{{"query":{query},"variables":{nested(depth)}}}')
    assert "deeper than 32" in refused(resp, 400, "BAD_REQUEST")
    # over GET too
    resp = await client.get(
        "/graphql",
        params={"query": "{ __typename }", "variables": nested(depth)},
        headers={"accept": "application/json"},
    )
    assert "deeper than 32" in refused(resp, 400, "BAD_REQUEST")


@pytest.mark.parametrize("name", ["variables", "extensions"])
async def test_a_get_parameter_that_is_not_json_is_named(client, name):
    resp = await client.get(
        "/graphql",
        params={"query": "{ __typename }", name: "{not json"},
        headers={"accept": "application/json"},
    )
    message = refused(resp, 400, "BAD_REQUEST")
    assert f"`{name}` query parameter" in message and "body" not in message, message


async def test_nesting_within_the_limit_is_served(client):
    query = json.dumps("{ __typename }")
    resp = await post_json(client, f'{{"query":{query},"variables":{nested(31)}}}')
    assert resp.json() == {"data": {"__typename": "Query"}}


async def test_large_bodies_are_refused_before_they_are_read(client):
    document = {"query": "{ __typename } #" + "x" * (10 * LIMIT)}
    resp = await client.post("/graphql", json=document)
    assert "1048576 bytes" in refused(resp, 413, "REQUEST_TOO_LARGE")

    sent = 0

    async def chunks():  # chunked: no Content-Length to check first
        nonlocal sent
        yield b'{"query":"{ __typename } #'
        for _ in range(40):
            sent += 64 * 1024
            yield b"x" * (64 * 1024)
        yield b'"}'

    resp = await client.post(
        "/graphql", content=chunks(), headers={"content-type": "application/json"}
    )
    refused(resp, 413, "REQUEST_TOO_LARGE")
    assert sent < 40 * 64 * 1024  # reading stopped at the limit

    # a body just under the limit is served
    document = {"query": "{ __typename }", "variables": {"s": "x" * (LIMIT - 100)}}
    resp = await client.post("/graphql", json=document)
    assert resp.json() == {"data": {"__typename": "Query"}}


async def test_long_query_strings_are_refused(settings, engine):
    small = create_app(settings.model_copy(update={"max_request_bytes": 16_384}), engine=engine)
    transport = httpx.ASGITransport(app=small)
    async with httpx.AsyncClient(transport=transport, base_url="http://roost.test") as c:
        resp = await c.get(
            "/graphql",
            params={"query": "{ __typename } #" + "x" * 20_000},
            headers={"accept": "application/json"},
        )
        assert "16384 bytes" in refused(resp, 414, "REQUEST_TOO_LARGE")
        resp = await c.get(
            "/graphql",
            params={"query": "{ __typename } #" + "x" * 10_000},
            headers={"accept": "application/json"},
        )
        assert resp.json() == {"data": {"__typename": "Query"}}


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_websocket_messages_are_bounded(settings, engine, make_users, protocol):
    (user,) = await make_users(1)
    async with local_server(settings, engine, max_request_bytes=64 * 1024) as (_, url):
        ws = await WSClient.open(url, protocol, user.token)
        big = {"id": "1", "type": "subscribe" if protocol == TRANSPORT_WS else "start"}
        big["payload"] = {"query": "{ __typename } #" + "x" * 70_000}
        await ws.ws.send(json.dumps(big))
        with pytest.raises(ConnectionClosed) as closed:
            await ws.message()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009

        ws = await WSClient.open(url, protocol, user.token)
        kind = "subscribe" if protocol == TRANSPORT_WS else "start"
        query = json.dumps("{ __typename }")
        await ws.ws.send(
            f'{{"id":"2","type":"{kind}","payload":{{"query":{query},"variables":{nested(990)}}}}}'
        )
        if protocol == TRANSPORT_WS:  # what the protocol does with a message not JSON
            with pytest.raises(ConnectionClosed) as closed:
                await ws.message()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4400
        else:  # graphql-ws ignores it; the socket goes on
            op = await ws.subscribe("query { __typename }")  # refused, but answered
            assert (await ws.message())["id"] == op
            await ws.close()


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


async def test_ten_megabyte_documents_cost_no_memory(settings):
    """Seven 10 MB comment-only documents against a real uvicorn process: each refused
    413, and the process's resident memory is where it was (on main it grew ~200 MB)."""
    api = start_api(
        {
            "DATABASE_URL": settings.database_url,
            "REDIS_URL": settings.redis_url,
            "ARQ_QUEUE": settings.arq_queue,
            "JWT_SECRET": settings.jwt_secret,
            "RATE_LIMIT_ENABLED": "false",
            "DB_POOL_SIZE": "2",
            "DB_MAX_OVERFLOW": "2",
        }
    )
    try:
        body = json.dumps({"query": "{ __typename } #" + "x" * 10_000_000}).encode()
        async with httpx.AsyncClient(base_url=api.http, timeout=60) as c:
            for _ in range(3):  # warm: the first requests allocate what every one needs
                await c.post("/graphql", json=TYPENAME)
            before = _rss_kb(api.proc.pid)
            for _ in range(7):
                resp = await c.post(
                    "/graphql", content=body, headers={"content-type": "application/json"}
                )
                refused(resp, 413, "REQUEST_TOO_LARGE")
            small = await asyncio.wait_for(c.post("/graphql", json=TYPENAME), 10)
            assert small.json() == {"data": {"__typename": "Query"}}
            after = _rss_kb(api.proc.pid)
        assert after - before < 20_000, (before, after)
    finally:
        api.stop()


async def test_a_long_comment_is_refused_unparsed(client):
    """Within the body limit, a document is still bounded: comments count toward no
    token, so its length is (16 characters per token of MAX_TOKENS)."""
    resp = await client.post("/graphql", json={"query": "{ __typename } #" + "x" * 200_000})
    (error,) = resp.json()["errors"]
    assert error["extensions"]["code"] == "GRAPHQL_PARSE_FAILED", error
    assert "longer than 64000 characters" in error["message"]
    resp = await client.post("/graphql", json={"query": "{ __typename } #" + "x" * 60_000})
    assert resp.json() == {"data": {"__typename": "Query"}}
