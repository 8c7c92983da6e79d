"""An operation message whose shape HTTP refuses with a 400 (a payload that is not an
object, a query that is not a string, variables or extensions that are not objects, a
non-string operationName, several operations and none named, a legacy ``start``
without an id) is refused on both WebSocket protocols with an ``error`` message coded
``BAD_REQUEST``: no traceback, no dropped socket, no silent ``complete``, no hang; the
socket and its other operations go on."""

from __future__ import annotations

import json
import logging

import pytest
from websockets.exceptions import ConnectionClosed

from tests.support.documents import FEED_SUB
from tests.support.subscriptions import PROTOCOLS, local_server
from tests.support.ws import LEGACY_WS, TRANSPORT_WS, WSClient

TWO_UNNAMED = "subscription A { feedItemAdded { id } } subscription B { feedItemAdded { id } }"

PAYLOADS = [
    [1],
    "x",
    {"query": 5},
    {"variables": {}},
    {"query": ""},
    {"query": "{ __typename }", "variables": "x"},
    {"query": "{ __typename }", "variables": [1]},
    {"query": "{ __typename }", "extensions": [1]},
    {"query": "{ __typename }", "operationName": 5},
    {"query": TWO_UNNAMED},
]


def _errors(msg: dict) -> list[dict]:
    payload = msg["payload"]
    return payload if isinstance(payload, list) else [payload]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_malformed_operations_are_bad_request_and_the_socket_goes_on(
    settings, engine, make_users, protocol, caplog
):
    (user,) = await make_users(1)
    kind = "start" if protocol == LEGACY_WS else "subscribe"
    async with local_server(settings, engine) as (_, url):
        ws = await WSClient.open(url, protocol, user.token)
        try:
            running = await ws.subscribe(FEED_SUB)
            await ws.nothing(0.3)
            with caplog.at_level(logging.WARNING):
                for n, payload in enumerate(PAYLOADS):
                    op = f"bad{n}"
                    await ws.ws.send(json.dumps({"id": op, "type": kind, "payload": payload}))
                    msg = await ws.message()
                    assert msg["type"] == "error" and msg["id"] == op, (payload, msg)
                    (error,) = _errors(msg)
                    assert error["extensions"]["code"] == "BAD_REQUEST", (payload, error)
                if protocol == LEGACY_WS:
                    start = {"type": "start", "payload": {"query": FEED_SUB}}
                    await ws.ws.send(json.dumps(start))
                    msg = await ws.message()
                    assert msg["type"] == "error", msg
                    assert _errors(msg)[0]["extensions"]["code"] == "BAD_REQUEST", msg
            errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
            assert not errors, [r.getMessage() for r in errors]
            # the socket still serves: the first subscription runs on (graphql-ws
            # acknowledges its stop), a query answers (graphql-transport-ws)
            if protocol == LEGACY_WS:
                await ws.stop(running)
                msg = await ws.message()
                assert msg == {"type": "complete", "id": running}, msg
            else:
                op = await ws.subscribe("query { viewer { id } }")
                msg = await ws.message()
                assert msg["id"] == op and msg["payload"]["data"]["viewer"]["id"], msg
        finally:
            await ws.close()


async def test_a_subscribe_without_a_string_id_closes_4400(settings, engine, make_users):
    """graphql-transport-ws: an operation id is a string; a message with another is an
    invalid message (close 4400), as one without an id is."""
    (user,) = await make_users(1)
    async with local_server(settings, engine) as (_, url):
        ws = await WSClient.open(url, TRANSPORT_WS, user.token)
        subscribe = {"id": 5, "type": "subscribe", "payload": {"query": "{ __typename }"}}
        await ws.ws.send(json.dumps(subscribe))
        with pytest.raises(ConnectionClosed) as closed:
            await ws.message()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4400
