"""Sessions and rate limits over WebSocket, both protocols.

Servers are real (uvicorn in this event loop, the test database and Redis); sessions end
through the use cases over HTTP (the in-process client) or directly, and the sockets of
the server under test must notice: through the ``session`` event on the user's channel,
or, when that event is lost, before the next event is sent.
"""

from __future__ import annotations

import asyncio
import random
import time

import httpx
import pytest
from redis.asyncio import Redis
from sqlalchemy import text
from websockets.exceptions import ConnectionClosed

import app.ws_guards
from adapters.session_cache import auth_key
from app.sessions import session_store
from domain.moderation.set_user_status import set_user_status
from domain.realtime import post_channel
from schema.ids import decode_global_id
from tests.support.polling import PATIENCE_S
from tests.support.subscriptions import served
from tests.support.ws import LEGACY_WS, TRANSPORT_WS, Refused, WSClient

PROTOCOLS = [TRANSPORT_WS, LEGACY_WS]

FEED_SUB = "subscription { feedItemAdded { id caption } }"
ENGAGEMENT_SUB = """subscription($id: ID!) { postEngagementChanged(postId: $id) {
  likeCount } }"""
CREATE = """mutation($c: String!) { createPost(input: { caption: $c }) {
  ... on CreatePostSuccess { post { id } } } }"""
LIKE = """mutation($id: ID!) { likePost(input: { postId: $id }) { __typename } }"""
LOG_OUT = "mutation { logOut(input: {}) { ... on LogOutSuccess { endedSessions } } }"
RENAME = """mutation($n: String!) { updateProfile(input: { displayName: $n }) {
  __typename } }"""


@pytest.fixture
async def redis(settings):
    r = Redis.from_url(settings.redis_url)
    yield r
    await r.aclose()


async def closed(client: WSClient, within: float = PATIENCE_S) -> int | None:
    """Wait until the server closes the socket (no result may arrive meanwhile); its
    close code."""
    deadline = time.monotonic() + within
    try:
        while time.monotonic() < deadline:
            msg = await client.message(max(deadline - time.monotonic(), 0.01))
            assert msg["type"] not in ("next", "data"), f"delivered after the end: {msg}"
    except ConnectionClosed as exc:
        return exc.rcvd.code if exc.rcvd else None
    raise AssertionError("the socket stayed open")


async def subscribed(redis: Redis, channel: str) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        ((_, n),) = await redis.pubsub_numsub(channel)
        if n:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{channel} never subscribed")


# --- items 1 and 2: ended sessions end their sockets -------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_log_out_closes_the_users_sockets_and_refuses_new_ones(
    settings, engine, make_users, gql, protocol
):
    (user,) = await make_users(1)
    async with served(settings, engine) as url:
        busy = await WSClient.open(url, protocol, user.token)
        await busy.subscribe(FEED_SUB)
        idle = await WSClient.open(url, protocol, user.token)  # no operation at all
        out = await gql(LOG_OUT, token=user.token)
        assert out["data"]["logOut"] == {"endedSessions": 1}
        assert await closed(busy) == 4403
        assert await closed(idle) == 4403
        with pytest.raises(Refused):
            await WSClient.open(url, protocol, user.token)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("status", ["banned", "deleted"])
async def test_a_banned_or_deleted_account_loses_its_sockets(
    settings, engine, make_users, redis, protocol, status
):
    (x,) = await make_users(1)
    async with served(settings, engine) as url:
        client = await WSClient.open(url, protocol, x.token)
        await client.subscribe(FEED_SUB)
        store = session_store(redis, settings.token_config)
        await set_user_status(
            engine, x.id, status, counter_shards=settings.counter_shards, sessions=store
        )
        assert await closed(client) == 4403
        with pytest.raises(Refused) as refused:
            await WSClient.open(url, protocol, x.token)
        if protocol == LEGACY_WS:
            assert refused.value.payload["code"] == "UNAUTHENTICATED"


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_no_event_is_sent_after_the_session_ended_even_if_the_notice_is_lost(
    settings, engine, make_users, gql, redis, monkeypatch, protocol
):
    # The notice on the user's channel is lost (the session ends in PostgreSQL and the
    # cache, nobody publishes): the check before each event still closes the socket.
    monkeypatch.setattr(app.ws_guards, "RECHECK_S", 0.0)
    author, watcher, fan = await make_users(3)
    pid = (await gql(CREATE, {"c": "watched"}, token=author.token))["data"]["createPost"]
    gid = pid["post"]["id"]
    async with served(settings, engine) as url:
        client = await WSClient.open(url, protocol, watcher.token)
        await client.subscribe(ENGAGEMENT_SUB, {"id": gid})
        from schema.ids import decode_global_id

        await subscribed(redis, post_channel(decode_global_id(gid, "Post", "id")))
        async with engine.begin() as conn:
            await conn.execute(
                text("UPDATE sessions SET revoked_at = now() WHERE user_id = :u"),
                {"u": watcher.id},
            )
        await redis.hset(auth_key(watcher.id), f"s:{watcher.session_id}", "0")
        await gql(LIKE, {"id": gid}, token=fan.token)
        assert await closed(client) == 4403


# --- item 6: the same budgets on every transport -----------------------------------------


def source_ip() -> str:
    """A loopback address of this test alone: its per-IP budget is its own."""
    return "127." + ".".join(str(random.randint(1, 254)) for _ in range(3))


def bad_log_ins(n: int) -> str:
    fields = " ".join(
        f'l{i}: logIn(input: {{username: "nobody", password: "guess{i}"}}) {{ __typename }}'
        for i in range(n)
    )
    return "mutation { " + fields + " }"


async def ws_result(client: WSClient, query: str, variables: dict | None = None) -> dict:
    """Run one operation; its first message: ``{"data"...}``, or ``{"error": [...]}``."""
    op = await client.subscribe(query, variables)
    msg = await client.message()
    assert msg["id"] == op, msg
    if msg["type"] == "error":
        payload = msg["payload"]
        return {"error": payload if isinstance(payload, list) else [payload]}
    assert msg["type"] in ("next", "data"), msg
    done = await client.message()
    assert (done["type"], done["id"]) == ("complete", op), done
    return msg["payload"]


def rate_limited(out: dict, budget: str) -> None:
    (err,) = out["error"]
    assert err["extensions"]["code"] == "RATE_LIMITED", out
    assert err["extensions"]["budget"] == budget, out
    assert err["extensions"]["retryAfter"] > 0, out


async def test_websocket_operations_share_the_http_budgets(settings, engine, make_users):
    protocol = TRANSPORT_WS  # queries and mutations: the legacy protocol runs neither
    ip = source_ip()
    (user,) = await make_users(1)
    limits = {
        "rate_limit_enabled": True,
        "rate_limit_window_s": 3600.0,  # no unit comes back during the test
        "rate_limit_auth": 4,
        "rate_limit_mutations": 5,
        "rate_limit_requests": 14,
    }
    async with served(settings, engine, **limits) as url:
        base = url.replace("ws://", "http://").removesuffix("/graphql")
        transport = httpx.AsyncHTTPTransport(local_address=ip)
        async with httpx.AsyncClient(
            transport=transport, base_url=base, timeout=PATIENCE_S
        ) as http:
            # The sign-in budget of this address, spent over HTTP (3 of 4) ...
            resp = await http.post("/graphql", json={"query": bad_log_ins(3)})
            assert resp.status_code == 200, resp.text
            client = await WSClient.open(url, protocol, user.token, local_addr=(ip, 0))
            try:
                # ... is the socket's too: 2 aliased logIns do not fit in 1 (the user's
                # budgets, checked first, were charged: 2 of 5 mutations).
                rate_limited(await ws_result(client, bad_log_ins(2)), "auth")
                # Mutations: 5 root fields per user, however they come.
                for i in range(2):
                    out = await ws_result(client, RENAME, {"n": f"n{i}"})
                    assert out["data"]["updateProfile"]["__typename"] == "UpdateProfileSuccess"
                headers = {"Authorization": f"Bearer {user.token}"}
                resp = await http.post(
                    "/graphql", json={"query": RENAME, "variables": {"n": "h"}}, headers=headers
                )
                assert resp.status_code == 200, resp.text  # the 5th, over HTTP
                rate_limited(await ws_result(client, RENAME, {"n": "x"}), "mutations")
                # Every operation: 14 per user, over GET, POST and the socket alike.
                # The refused auth operation was charged to the user (its group passed),
                # the refused mutation was not (nothing of a refused group is charged).
                spent = 1 + 2 + 1
                for _ in range(3):
                    get = await http.get(
                        "/graphql", params={"query": "{ viewer { id } }"}, headers=headers
                    )
                    assert get.status_code == 200, get.text
                spent += 3
                for _ in range(14 - spent):
                    assert "data" in await ws_result(client, "{ viewer { id } }")
                rate_limited(await ws_result(client, "{ viewer { id } }"), "all")
                get = await http.get(
                    "/graphql", params={"query": "{ viewer { id } }"}, headers=headers
                )
                assert get.status_code == 429
            finally:
                await client.close()


async def test_legacy_websocket_operations_are_charged_too(settings, engine, make_users):
    ip = source_ip()
    (user,) = await make_users(1)
    limits = {
        "rate_limit_enabled": True,
        "rate_limit_window_s": 3600.0,
        "rate_limit_auth": 2,
        "rate_limit_requests": 4,
    }
    async with served(settings, engine, **limits) as url:
        client = await WSClient.open(url, LEGACY_WS, user.token, local_addr=(ip, 0))
        try:
            # 3 aliased logIns: more than the whole sign-in budget, refused before
            # anything runs or is charged.
            rate_limited(await ws_result(client, bad_log_ins(3)), "auth")
            for _ in range(4):
                await client.subscribe(FEED_SUB)
            rate_limited(await ws_result(client, FEED_SUB), "all")
        finally:
            await client.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_websocket_variables_count_against_the_token_limit(
    settings, engine, make_users, protocol
):
    (user,) = await make_users(1)
    async with served(settings, engine) as url:
        client = await WSClient.open(url, protocol, user.token)
        try:
            sub = "subscription($id: ID!) { postEngagementChanged(postId: $id) { likeCount } }"
            out = await ws_result(client, sub, {"id": "x", "more": ["x"] * 100_000})
            assert out["error"][0]["extensions"]["code"] == "BAD_USER_INPUT", out
            if protocol == TRANSPORT_WS:
                nodes = "query($ids: [ID!]!) { nodes(ids: $ids) { id } }"
                out = await ws_result(client, nodes, {"ids": [user.gid] * 101})
                assert out["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT", out
        finally:
            await client.close()


# --- bad input on a socket is the operation's own -----------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_syntax_error_fails_its_operation_only(
    settings, engine, make_users, gql, redis, protocol
):
    """A document that does not parse gets a GRAPHQL_PARSE_FAILED error for its
    operation, like a validation error; the socket and its live subscription go on."""
    author, watcher, fan = await make_users(3)
    pid = (await gql(CREATE, {"c": "watched"}, token=author.token))["data"]["createPost"]
    gid = pid["post"]["id"]
    async with served(settings, engine) as url:
        client = await WSClient.open(url, protocol, watcher.token)
        try:
            live = await client.subscribe(ENGAGEMENT_SUB, {"id": gid})
            await subscribed(redis, post_channel(decode_global_id(gid, "Post", "id")))
            out = await ws_result(client, "subscription { feedItemAdded { id }")
            (err,) = out["error"]
            assert err["extensions"]["code"] == "GRAPHQL_PARSE_FAILED", out
            assert err["message"].startswith("Syntax Error"), out
            await gql(LIKE, {"id": gid}, token=fan.token)
            msg = await client.message()  # the socket is open, its subscription live
            assert (msg["id"], msg["type"]) == (
                live,
                "next" if protocol == TRANSPORT_WS else "data",
            )
            assert msg["payload"]["data"]["postEngagementChanged"] == {"likeCount": 1}, msg
        finally:
            await client.close()


#: (`first` is nullable: its null means the default, tests/e2e/test_relay_paging.py.)
NULL_FOR_A_DEFAULT = [
    (
        "query($o: FeedOrder) { viewer { feed(first: 2, order: $o) { edges { cursor } } } }",
        {"o": None},
    ),
]


@pytest.mark.parametrize("protocol", [TRANSPORT_WS])  # the legacy protocol runs no queries
@pytest.mark.parametrize(("query", "variables"), NULL_FOR_A_DEFAULT)
async def test_null_for_an_argument_with_a_default_is_bad_user_input_over_websocket(
    settings, engine, make_users, protocol, query, variables
):
    (user,) = await make_users(1)
    async with served(settings, engine) as url:
        client = await WSClient.open(url, protocol, user.token)
        try:
            out = await ws_result(client, query, variables)
            errors = out.get("errors") or out.get("error")
            assert errors[0]["extensions"]["code"] == "BAD_USER_INPUT", out
            assert errors[0]["message"] != "Internal server error.", out
        finally:
            await client.close()
