"""What a mobile or web client expects of the HTTP layer (app/http_edge.py, app/asgi.py):
gzip when asked, CORS with an allow-list, RateLimit-* headers, the Authorization scheme
checked, request ids, SERVICE_UNAVAILABLE (503) when PostgreSQL is down, and a masked
internal error logged once with its request id."""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import random
import time
import uuid

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

import resolvers.query
from app.asgi import create_app
from app.database import create_engine
from tests.support.polling import PATIENCE_S
from tests.support.servers import serving
from tests.support.subscriptions import local_server

FEW = "{ __typename }"
# A response of a few KB: every type's name and fields.
BIG = "{ __schema { types { name fields { name } } } }"


def random_ip() -> str:
    return "10." + ".".join(str(random.randint(1, 254)) for _ in range(3))


@pytest.fixture
async def make_client(settings, engine):
    """``make_client(**settings)``: a client of a fresh app with those settings."""
    clients: list[httpx.AsyncClient] = []

    def _make(**overrides) -> httpx.AsyncClient:
        app = create_app(
            settings.model_copy(update=overrides), engine=overrides.pop("_engine", engine)
        )
        transport = httpx.ASGITransport(app=app, client=(random_ip(), 40_000))
        client = httpx.AsyncClient(transport=transport, base_url="http://roost.test")
        clients.append(client)
        return client

    yield _make
    for c in clients:
        await c.aclose()


# --- gzip -------------------------------------------------------------------------------


async def test_gzip_over_a_kilobyte_when_asked(client) -> None:
    big = await client.post("/graphql", json={"query": BIG}, headers={"Accept-Encoding": "gzip"})
    assert big.status_code == 200
    assert big.headers["content-encoding"] == "gzip"
    assert "accept-encoding" in big.headers["vary"].lower()
    assert int(big.headers["content-length"]) < len(big.content) / 3  # compressed on the wire
    assert big.json()["data"]["__schema"]["types"]

    small = await client.post("/graphql", json={"query": FEW}, headers={"Accept-Encoding": "gzip"})
    assert "content-encoding" not in small.headers  # under ~1 KB: as it is

    plain = await client.post(
        "/graphql", json={"query": BIG}, headers={"Accept-Encoding": "identity"}
    )
    assert "content-encoding" not in plain.headers
    assert plain.json() == big.json()


async def test_gzip_body_is_real_gzip(client) -> None:
    # httpx decodes transparently: read the raw stream to see the bytes on the wire.
    async with client.stream(
        "POST", "/graphql", json={"query": BIG}, headers={"Accept-Encoding": "gzip"}
    ) as resp:
        raw = b"".join([chunk async for chunk in resp.aiter_raw()])
    assert json.loads(gzip.decompress(raw))["data"]


# --- request ids ------------------------------------------------------------------------


async def test_request_id_is_echoed_or_made(client) -> None:
    mine = await client.post("/graphql", json={"query": FEW}, headers={"X-Request-ID": "abc-123"})
    assert mine.headers["x-request-id"] == "abc-123"
    made = await client.post("/graphql", json={"query": FEW})
    assert len(made.headers["x-request-id"]) == 32
    odd = await client.post("/graphql", json={"query": FEW}, headers={"X-Request-ID": "a b\tc"})
    assert odd.headers["x-request-id"] != "a b\tc" and len(odd.headers["x-request-id"]) == 32


# --- CORS -------------------------------------------------------------------------------

PREFLIGHT = {
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization, content-type, idempotency-key",
}


async def test_cors_preflight_is_204_for_an_allowed_origin(make_client) -> None:
    c = make_client(cors_allow_origins="https://app.example.com, http://localhost:*")
    for origin in ("https://app.example.com", "http://localhost:3000"):
        pre = await c.options("/graphql", headers={"Origin": origin, **PREFLIGHT})
        assert pre.status_code == 204, pre.text
        assert pre.headers["access-control-allow-origin"] == origin
        allowed = pre.headers["access-control-allow-headers"].lower()
        assert "authorization" in allowed and "idempotency-key" in allowed
        assert "POST" in pre.headers["access-control-allow-methods"]
        assert pre.content == b""

    refused = await c.options("/graphql", headers={"Origin": "https://evil.example", **PREFLIGHT})
    assert refused.status_code == 400
    assert "access-control-allow-origin" not in refused.headers

    real = await c.post(
        "/graphql", json={"query": FEW}, headers={"Origin": "https://app.example.com"}
    )
    assert real.headers["access-control-allow-origin"] == "https://app.example.com"
    exposed = real.headers["access-control-expose-headers"]
    assert "RateLimit-Remaining" in exposed and "X-Request-ID" in exposed


CLIENT_HEADERS = (
    "apollographql-client-name, apollographql-client-version, apollo-require-preflight,"
    " x-apollo-operation-name, graphql-client-name, content-type"
)


async def test_cors_allows_the_headers_graphql_clients_send_and_the_configured_ones(
    make_client,
) -> None:
    c = make_client(cors_allow_origins="https://app.example.com", cors_allow_headers=" X-Tenant ,")
    origin = {"Origin": "https://app.example.com", "Access-Control-Request-Method": "POST"}
    pre = await c.options(
        "/graphql", headers={**origin, "Access-Control-Request-Headers": CLIENT_HEADERS}
    )
    assert pre.status_code == 204, pre.text
    allowed = {h.strip() for h in pre.headers["access-control-allow-headers"].lower().split(",")}
    assert {h.strip() for h in CLIENT_HEADERS.split(",")} <= allowed
    assert "x-tenant" in allowed

    extra = await c.options(
        "/graphql", headers={**origin, "Access-Control-Request-Headers": "x-tenant"}
    )
    assert extra.status_code == 204, extra.text
    for outside in ("x-not-listed", "apollographql-client-name, cookie2"):
        refused = await c.options(
            "/graphql", headers={**origin, "Access-Control-Request-Headers": outside}
        )
        assert refused.status_code == 400
        assert "Disallowed CORS headers" in refused.text


@pytest.mark.parametrize(
    ("origin", "admitted"),
    [
        ("https://app.example.com", True),
        ("http://localhost:5173", True),  # a wildcard entry
        ("https://evil.example.net", False),
        (None, True),  # no Origin: not a browser
    ],
)
async def test_browser_websockets_follow_the_cors_allow_list(
    settings, engine, make_users, origin, admitted
) -> None:
    """A page of an allowed origin subscribes like it queries; others get 403."""
    (a,) = await make_users(1)
    overrides = {"cors_allow_origins": "https://app.example.com, http://localhost:*"}
    async with local_server(settings, engine, **overrides) as (_, url):
        headers = {"Origin": origin} if origin else {}
        try:
            async with connect(
                url, subprotocols=["graphql-transport-ws"], additional_headers=headers
            ) as ws:
                await ws.send(
                    json.dumps(
                        {
                            "type": "connection_init",
                            "payload": {"authorization": f"Bearer {a.token}"},
                        }
                    )
                )
                reply = json.loads(await asyncio.wait_for(ws.recv(), PATIENCE_S))
                status = 101 if reply["type"] == "connection_ack" else reply
        except InvalidStatus as exc:
            status = exc.response.status_code
    assert status == (101 if admitted else 403)


async def test_without_an_allow_list_there_is_no_cors(client) -> None:
    pre = await client.options(
        "/graphql", headers={"Origin": "https://app.example.com", **PREFLIGHT}
    )
    assert pre.status_code == 405
    assert "access-control-allow-origin" not in pre.headers


# --- RateLimit-* ------------------------------------------------------------------------


async def test_ratelimit_headers_on_successful_responses(make_client, make_users) -> None:
    (a,) = await make_users(1)
    c = make_client(rate_limit_enabled=True, rate_limit_requests=50, rate_limit_mutations=10)
    auth = {"Authorization": f"Bearer {a.token}"}
    first = await c.post("/graphql", json={"query": "{ viewer { username } }"}, headers=auth)
    assert first.status_code == 200
    assert first.headers["ratelimit-limit"] == "50"
    assert first.headers["ratelimit-remaining"] == "49"
    assert 1 <= int(first.headers["ratelimit-reset"]) <= 60
    assert first.headers["ratelimit-policy"] == "50;w=60"

    second = await c.post("/graphql", json={"query": "{ viewer { username } }"}, headers=auth)
    assert second.headers["ratelimit-remaining"] == "48"

    mutation = 'mutation { updateProfile(input: { bio: "hi" }) { __typename } }'
    m = await c.post("/graphql", json={"query": mutation}, headers=auth)
    assert m.status_code == 200, m.text
    # The budget closest to empty: the mutations' (10 per minute), 9 left.
    assert (m.headers["ratelimit-limit"], m.headers["ratelimit-remaining"]) == ("10", "9")
    assert m.headers["ratelimit-policy"] == "50;w=60, 10;w=60"


# --- the Authorization scheme -----------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "says"),
    [
        ("Token abc.def.ghi", "scheme 'Token' is not supported"),
        ("Basic dXNlcjpwYXNz", "scheme 'Basic' is not supported"),
        ("eyJhbGciOiJIUzI1NiJ9.e30.x", "bare token"),
        ("Bearer ", "no token after 'Bearer'"),
    ],
    ids=["token-scheme", "basic", "bare-token", "empty-bearer"],
)
async def test_a_wrong_authorization_scheme_is_refused_and_said(client, header, says) -> None:
    resp = await client.post(
        "/graphql", json={"query": "{ viewer { username } }"}, headers={"Authorization": header}
    )
    assert resp.status_code == 401, resp.text
    assert resp.headers["www-authenticate"].startswith("Bearer")
    (err,) = resp.json()["errors"]
    assert err["extensions"]["code"] == "UNAUTHENTICATED"
    assert says in err["message"], err["message"]


async def test_bearer_is_matched_whatever_its_case(client, make_users) -> None:
    (a,) = await make_users(1)
    resp = await client.post(
        "/graphql",
        json={"query": "{ viewer { username } }"},
        headers={"Authorization": f"bearer {a.token}"},
    )
    assert resp.json() == {"data": {"viewer": {"username": a.username}}}


async def test_a_wrong_scheme_in_connection_init_is_refused_and_said(app, make_users) -> None:
    (a,) = await make_users(1)
    async with serving(app) as url:
        ws_url = url.replace("http", "ws") + "/graphql"
        async with connect(ws_url, subprotocols=["graphql-ws"]) as ws:
            await ws.send(
                json.dumps(
                    {"type": "connection_init", "payload": {"authorization": f"Token {a.token}"}}
                )
            )
            msg = json.loads(await asyncio.wait_for(ws.recv(), PATIENCE_S))
        assert msg["type"] == "connection_error"
        assert "scheme 'Token' is not supported" in msg["payload"]["message"]
        async with connect(ws_url, subprotocols=["graphql-transport-ws"]) as ws:
            await ws.send(
                json.dumps({"type": "connection_init", "payload": {"authorization": a.token}})
            )
            with pytest.raises(ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), PATIENCE_S)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403


# --- PostgreSQL down: SERVICE_UNAVAILABLE -----------------------------------------------


async def test_postgres_down_is_503_with_retry_after_within_a_bound(make_client) -> None:
    dead = create_engine(
        "postgresql://postgres@127.0.0.1:1/nowhere", connect_timeout_s=1, pool_timeout_s=1
    )
    try:
        c = make_client(_engine=dead)
        started = time.monotonic()
        resp = await c.post("/graphql", json={"query": '{ user(username: "sd0") { username } }'})
        took = time.monotonic() - started
        assert resp.status_code == 503, resp.text
        assert resp.headers["retry-after"] == "5"
        (err,) = resp.json()["errors"]
        assert err["extensions"] == {
            "code": "SERVICE_UNAVAILABLE",
            "dependency": "postgres",
            "retryAfter": 5,
        }
        assert "Internal" not in resp.text
        assert took < 5, took
        ready = await c.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["postgres"].startswith("error")
        assert ready.json()["redis"] == "ok"
        # A request that needs no database still answers.
        assert (await c.post("/graphql", json={"query": FEW})).status_code == 200
    finally:
        await dead.dispose()


# --- a masked internal error, logged once with its request id -----------------------------


async def test_masked_internal_error_is_logged_once_with_its_request_id(
    client, monkeypatch, caplog
) -> None:
    async def broken(*args, **kwargs):
        raise RuntimeError("secret detail")

    monkeypatch.setattr(resolvers.query, "user_by_username", broken)
    rid = uuid.uuid4().hex
    caplog.set_level(logging.DEBUG)
    resp = await client.post(
        "/graphql",
        json={"query": '{ user(username: "sd0") { username } }'},
        headers={"X-Request-ID": rid},
    )
    body = resp.json()
    assert body["errors"][0]["extensions"]["code"] == "INTERNAL_SERVER_ERROR", body
    assert "secret" not in resp.text
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, [r.getMessage() for r in errors]
    assert rid in errors[0].getMessage() and errors[0].exc_info is not None
    assert not [r for r in caplog.records if r.name.startswith("strawberry")]
