"""connection_init takes the payload shapes the common GraphQL clients send
(``authorization``, ``Authorization``, ``headers.Authorization``, ``authToken``), on both
WebSocket protocols, and a refusal says why: graphql-transport-ws closes with 4403 and
the message as its reason, graphql-ws answers ``connection_error`` with the message."""

from __future__ import annotations

import asyncio
import json

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.support.polling import PATIENCE_S
from tests.support.servers import serving

PROTOCOLS = ["graphql-transport-ws", "graphql-ws"]


async def _init(url: str, protocol: str, payload: object) -> tuple[str, object]:
    """("ack", None), ("closed", (code, reason)) or ("error", message payload)."""
    async with connect(url, subprotocols=[protocol]) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": payload}))
        try:
            msg = json.loads(await asyncio.wait_for(ws.recv(), PATIENCE_S))
        except ConnectionClosed as exc:
            assert exc.rcvd is not None
            return "closed", (exc.rcvd.code, exc.rcvd.reason)
    if msg["type"] == "connection_ack":
        return "ack", None
    return "error", msg.get("payload")


@pytest.fixture
async def ws_url(app):
    async with serving(app) as url:
        yield url.replace("http", "ws") + "/graphql"


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(
    "shape",
    [
        lambda t: {"authorization": f"Bearer {t}"},
        lambda t: {"Authorization": f"Bearer {t}"},
        lambda t: {"headers": {"Authorization": f"Bearer {t}"}},
        lambda t: {"headers": {"authorization": f"bearer {t}"}},
        lambda t: {"authToken": t},
        lambda t: {"authToken": f"Bearer {t}"},
    ],
    ids=[
        "authorization",
        "Authorization",
        "headers.Authorization",
        "headers.lower",
        "authToken",
        "authToken-bearer",
    ],
)
async def test_the_shapes_clients_send_are_accepted(ws_url, make_users, protocol, shape):
    (user,) = await make_users(1)
    assert await _init(ws_url, protocol, shape(user.token)) == ("ack", None)


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        ({}, "Send 'authorization: Bearer <accessToken>'"),
        ({"headers": {"X-Other": "1"}}, "(or headers.Authorization, authToken)"),
        ({"authorization": 42}, "must be a string"),
        ({"authToken": ""}, "must be the access token"),
        ({"Authorization": "Token abc"}, "scheme 'Token' is not supported"),
        ({"authToken": "not-a-jwt"}, "token"),
    ],
)
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_refusal_says_why(ws_url, protocol, payload, says):
    kind, detail = await _init(ws_url, protocol, payload)
    if protocol == "graphql-transport-ws":
        assert kind == "closed"
        code, reason = detail
        assert code == 4403 and reason.startswith("Forbidden: ") and says in reason, reason
        assert len(reason.encode()) <= 123
    else:
        assert kind == "error"
        assert detail["code"] == "UNAUTHENTICATED" and says in detail["message"], detail


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_second_connection_init_is_refused(ws_url, make_users, protocol):
    """A socket signs in once: a second connection_init, even with another account's
    token, closes it with 4429 (graphql-ws answers ``connection_error`` first), so no
    operation runs as an account whose session the socket's guard does not watch."""
    first, second = await make_users(2, prefix="reinit")
    async with connect(ws_url, subprotocols=[protocol]) as ws:
        for user in (first, second):
            auth = {"authorization": f"Bearer {user.token}"}
            init = {"type": "connection_init", "payload": auth}
            await ws.send(json.dumps(init))
            if user is first:
                ack = json.loads(await asyncio.wait_for(ws.recv(), PATIENCE_S))
                assert ack["type"] == "connection_ack", ack
        got = []
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                got.append(json.loads(await asyncio.wait_for(ws.recv(), PATIENCE_S)))
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4429
    assert closed.value.rcvd.reason == "Too many initialisation requests"
    if protocol == "graphql-ws":
        assert [m["type"] for m in got if m["type"] != "ka"] == ["connection_error"], got
