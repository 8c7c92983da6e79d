"""The GraphQL-over-HTTP spec: media types, status codes, request errors.

The spec's own audit suite, the npm ``graphql-http`` package's ``auditServer``, runs
against a real API process: every MUST (13) and every SHOULD (23) passes. It is
installed with npm into a cache folder (once per version, tests/support/npm.py); the
test is skipped, saying why, only when node or npm is not on the machine.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.support.npm import npm_folder
from tests.support.polling import PATIENCE_S
from tests.support.subscriptions import local_server
from tests.support.ws import start_api

GRAPHQL_HTTP = "graphql-http@1.23.1"
GRAPHQL_JS = "graphql@16.15.0"
AUDIT_SCRIPT = """
import { auditServer } from 'graphql-http';
const results = await auditServer({ url: process.argv[2] });
console.log(JSON.stringify(results.map((r) => ({ id: r.id, name: r.name, status: r.status,
  reason: r.reason }))));
"""

FEED_SUB = "subscription { feedItemAdded { id } }"
GRAPHQL_RESPONSE = "application/graphql-response+json"


def _install_audit() -> Path:
    """The audit script beside graphql-http (tests/support/npm.py installs it once)."""
    folder = npm_folder("graphql-http", [GRAPHQL_HTTP, GRAPHQL_JS])
    script = folder / "audit.mjs"
    script.write_text(AUDIT_SCRIPT)
    return script


@pytest.fixture(scope="module")
def api(settings):
    proc = start_api(
        {
            "DATABASE_URL": settings.database_url,
            "REDIS_URL": settings.redis_url,
            "ARQ_QUEUE": settings.arq_queue,
            "JWT_SECRET": settings.jwt_secret,
            "RATE_LIMIT_ENABLED": "false",
            "WORKER_METRICS_PORT": "0",
            "DB_POOL_SIZE": "2",
            "DB_MAX_OVERFLOW": "2",
        }
    )
    yield proc
    proc.stop()


async def test_graphql_http_audit_suite(api):
    script = await asyncio.to_thread(_install_audit)
    proc = await asyncio.create_subprocess_exec(
        "node",
        str(script),
        f"{api.http}/graphql",
        cwd=script.parent,
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 300)
    assert proc.returncode == 0, out
    results = json.loads(out)
    tally = {
        level: (
            sum(1 for r in results if r["name"].startswith(level) and r["status"] == "ok"),
            sum(1 for r in results if r["name"].startswith(level)),
        )
        for level in ("MUST", "SHOULD")
    }
    failing = [r for r in results if r["status"] != "ok" and not r["name"].startswith("MAY")]
    print("graphql-http audit:", {k: f"{ok}/{n}" for k, (ok, n) in tally.items()}, failing)
    must_ok, must = tally["MUST"]
    should_ok, should = tally["SHOULD"]
    assert must_ok == must == 13, failing
    assert should_ok == should == 23, failing


# --- item 12: negotiation, in-process ----------------------------------------------------


@pytest.mark.parametrize(
    ("accept", "media"),
    [
        (GRAPHQL_RESPONSE, GRAPHQL_RESPONSE),
        (f"{GRAPHQL_RESPONSE}, application/json;q=0.9", GRAPHQL_RESPONSE),
        ("application/json", "application/json"),
        ("*/*", "application/json"),
        (None, "application/json"),
    ],
)
async def test_media_type_is_negotiated(client, accept, media):
    headers = {"accept": accept} if accept else {}
    ok = await client.post("/graphql", json={"query": "{ __typename }"}, headers=headers)
    assert ok.status_code == 200 and ok.headers["content-type"].startswith(media), ok.headers
    bad = await client.post("/graphql", json={"query": "{ nope }"}, headers=headers)
    assert bad.headers["content-type"].startswith(media)
    assert bad.status_code == (400 if media == GRAPHQL_RESPONSE else 200)
    assert "data" not in bad.json()
    assert bad.json()["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"


async def test_unacceptable_accept_is_406(client):
    resp = await client.post(
        "/graphql", json={"query": "{ __typename }"}, headers={"accept": "text/plain"}
    )
    assert resp.status_code == 406
    assert GRAPHQL_RESPONSE in resp.headers["accept"]


async def test_variable_coercion_failure_is_400_with_graphql_response_json(client):
    resp = await client.post(
        "/graphql",
        json={"query": "query($u: String!) { user(username: $u) { id } }", "variables": {}},
        headers={"accept": GRAPHQL_RESPONSE},
    )
    assert resp.status_code == 400
    body = resp.json()
    assert "data" not in body and body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


# --- item 10: subscriptions over HTTP ----------------------------------------------------


@pytest.mark.parametrize("method", ["post", "get"])
async def test_subscription_over_http_is_bad_request(client, method, caplog):
    caplog.set_level(logging.DEBUG)
    kwargs = {"json": {"query": FEED_SUB}} if method == "post" else {"params": {"query": FEED_SUB}}
    resp = await getattr(client, method)("/graphql", **kwargs)
    assert resp.status_code == 400, resp.text
    (error,) = resp.json()["errors"]
    assert error["extensions"]["code"] == "BAD_REQUEST"
    assert "WebSocket" in error["message"] and "/graphql" in error["message"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


# --- item 11: a client that leaves mid-request -------------------------------------------


async def test_client_disconnect_mid_request_is_one_info_line(settings, engine, caplog):
    caplog.set_level(logging.DEBUG)
    async with local_server(settings, engine) as (_, url):
        port = urlsplit(url).port
        for _ in range(5):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            body = b'{"query": "{ __typename }"}'
            writer.write(
                b"POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(body) + 100, body)
            )
            await writer.drain()
            writer.close()  # before the promised body arrived
            await writer.wait_closed()
        # The server saw them all: a request after them is served.
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=PATIENCE_S) as c:
            ok = await c.post("/graphql", json={"query": "{ __typename }"})
            assert ok.json() == {"data": {"__typename": "Query"}}
        deadline = asyncio.get_running_loop().time() + 10
        while asyncio.get_running_loop().time() < deadline:
            lines = [r for r in caplog.records if "disconnected" in r.getMessage()]
            if len(lines) == 5:
                break
            await asyncio.sleep(0.02)
    assert len(lines) == 5, [r.getMessage() for r in caplog.records]
    assert all(r.levelno <= logging.INFO and not r.exc_info for r in lines)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not errors, [(r.name, r.getMessage()) for r in errors]


@pytest.mark.parametrize("name", [["A"], {"a": 1}, 5, True])
async def test_operation_name_that_is_not_a_string_is_bad_request(client, name):
    resp = await client.post(
        "/graphql", json={"query": "query A { __typename }", "operationName": name}
    )
    assert resp.status_code == 400, resp.text
    assert resp.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
