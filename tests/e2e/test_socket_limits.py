"""An operation past MAX_SUBSCRIPTIONS_PER_SOCKET on one WebSocket (both protocols;
subscriptions, queries and mutations alike) is refused with its own code,
TOO_MANY_OPERATIONS, on that operation alone: no INTERNAL_SERVER_ERROR, no ERROR log,
the socket and its running operations go on, and the refused mutation changed nothing."""

from __future__ import annotations

import logging

import pytest

from tests.support.documents import FEED_SUB
from tests.support.subscriptions import PROTOCOLS, local_server
from tests.support.ws import LEGACY_WS, WSClient

RENAME = """mutation($n: String!) { updateProfile(input: { displayName: $n }) { __typename } }"""


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_operations_past_the_limit_get_their_own_code(
    settings, engine, make_users, gql, protocol, caplog
):
    (user,) = await make_users(1)
    async with local_server(settings, engine, max_subscriptions_per_socket=2) as (_, url):
        ws = await WSClient.open(url, protocol, user.token)
        try:
            first = await ws.subscribe(FEED_SUB)
            await ws.subscribe(FEED_SUB)
            await ws.nothing(0.3)
            with caplog.at_level(logging.WARNING):
                for query, variables in (
                    (FEED_SUB, None),
                    ("query { viewer { username } }", None),
                    (RENAME, {"n": "Renamed Over The Limit"}),
                ):
                    op = await ws.subscribe(query, variables)
                    msg = await ws.message()
                    assert msg["type"] == "error" and msg["id"] == op, msg
                    payload = msg["payload"]
                    (error,) = payload if isinstance(payload, list) else [payload]
                    assert error["extensions"]["code"] == "TOO_MANY_OPERATIONS", error
                    assert "MAX_SUBSCRIPTIONS_PER_SOCKET" in error["message"]
            errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
            assert not errors, [r.getMessage() for r in errors]
            # completing one frees its place
            await ws.stop(first)
            if protocol == LEGACY_WS:  # graphql-ws acknowledges a stop
                assert (await ws.message())["type"] == "complete"
            await ws.subscribe(FEED_SUB)
            await ws.nothing(0.5)
        finally:
            await ws.close()
    profile = await gql("{ viewer { displayName } }", token=user.token)
    assert profile["data"]["viewer"]["displayName"] != "Renamed Over The Limit"
