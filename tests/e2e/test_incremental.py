"""@defer and @stream over HTTP (multipart/mixed, graphql-core 3.3's incremental format:
``pending``, ``incremental``, ``completed``): the parts as sent, a typed code on an
error inside a deferred part, and a clear 406 for a client that does not accept
multipart. Apollo Client reading them: tests/e2e/test_real_clients.py."""

from __future__ import annotations

import json

import pytest

from schema.users.types import User
from tests.support.actions import follow_all
from tests.support.subscriptions import served
from tests.support.ws import LEGACY_WS, TRANSPORT_WS, WSClient

MULTIPART = {"Accept": "multipart/mixed;incrementalSpec=v0.2, application/json"}
DEFERRED = """query($u: String!) { user(username: $u) { username
  ... @defer(label: "counts") { followerCount } } }"""
STREAMED = """query($u: String!) { user(username: $u) {
  followers(first: 3) { edges @stream(initialCount: 1) { node { username } } } } }"""
FORBIDDEN_LATER = """query($u: String!) { user(username: $u) { username
  ... @defer { notifications(first: 1) { edges { cursor } } } } }"""


def _parts(resp) -> list[dict]:
    assert resp.headers["content-type"].startswith("multipart/mixed"), resp.headers
    boundary = resp.headers["content-type"].split("boundary=")[1].strip('"')
    parts = []
    for chunk in resp.text.split(f"--{boundary}"):
        body = chunk.partition("\r\n\r\n")[2].strip()
        if body:
            parts.append(json.loads(body))
    return parts


async def test_defer_sends_the_rest_in_a_later_part(client, make_users, gql):
    star, fan = await make_users(2, prefix="inc")
    await follow_all(gql, [fan], star)
    resp = await client.post(
        "/graphql", json={"query": DEFERRED, "variables": {"u": star.username}}, headers=MULTIPART
    )
    assert resp.status_code == 200
    first, *rest = _parts(resp)
    assert first["data"] == {"user": {"username": star.username}} and first["hasNext"] is True
    assert first["pending"][0]["label"] == "counts"
    later = [i for p in rest for i in p.get("incremental", ())]
    assert later == [{"data": {"followerCount": 1}, "id": "0", "path": ["user"], "label": "counts"}]
    assert rest[-1]["hasNext"] is False


async def test_stream_sends_list_items_after_the_first(client, make_users, gql):
    star, *fans = await make_users(4, prefix="inc")
    await follow_all(gql, fans, star)
    resp = await client.post(
        "/graphql", json={"query": STREAMED, "variables": {"u": star.username}}, headers=MULTIPART
    )
    first, *rest = _parts(resp)
    assert len(first["data"]["user"]["followers"]["edges"]) == 1
    items = [item for p in rest for i in p.get("incremental", ()) for item in i.get("items", ())]
    names = {e["node"]["username"] for e in items} | {
        first["data"]["user"]["followers"]["edges"][0]["node"]["username"]
    }
    assert names == {f.username for f in fans}


async def test_an_error_in_a_deferred_part_has_its_code(client, make_users):
    someone, other = await make_users(2, prefix="inc")
    resp = await client.post(
        "/graphql",
        json={"query": FORBIDDEN_LATER, "variables": {"u": someone.username}},
        headers={**MULTIPART, "Authorization": f"Bearer {other.token}"},
    )
    errors = [
        e for p in _parts(resp)[1:] for i in p.get("incremental", ()) for e in i.get("errors", ())
    ] + [e for p in _parts(resp)[1:] for c in p.get("completed", ()) for e in c.get("errors", ())]
    assert errors and all(e["extensions"]["code"] == "FORBIDDEN" for e in errors), errors


async def test_without_multipart_in_accept_it_is_406_saying_why(client, make_users):
    (someone,) = await make_users(1, prefix="inc")
    resp = await client.post(
        "/graphql", json={"query": DEFERRED, "variables": {"u": someone.username}}
    )
    assert resp.status_code == 406, resp.text
    (error,) = resp.json()["errors"]
    assert error["extensions"]["code"] == "BAD_REQUEST" and "multipart/mixed" in error["message"]
    # a directive named only in a string is no directive
    plain = await client.post(
        "/graphql",
        json={"query": 'query { user(username: "@defer") { username } }'},
    )
    assert plain.status_code == 200 and plain.json() == {"data": {"user": None}}


# --- over WebSocket: the same parts as messages ------------------------------------------

PROTOCOLS = [TRANSPORT_WS, LEGACY_WS]


async def _over_socket(url: str, protocol: str, token: str, query: str, variables: dict):
    """The messages of one operation over ``protocol``, up to its ``complete`` (or
    ``error``), each checked to be the operation's."""
    ws = await WSClient.open(url, protocol, token)
    try:
        op = await ws.subscribe(query, variables)
        messages = [await ws.message()]
        while messages[-1]["type"] not in ("complete", "error"):
            messages.append(await ws.message())
    finally:
        await ws.close()
    assert all(m["id"] == op for m in messages), messages
    return messages


def _results(messages: list[dict], protocol: str) -> list[dict]:
    """The result payloads of ``messages``, which end in ``complete``."""
    *results, end = messages
    assert end["type"] == "complete", messages
    kind = "next" if protocol == TRANSPORT_WS else "data"
    assert results and all(m["type"] == kind for m in results), messages
    return [m["payload"] for m in results]


def _without_empty_extensions(part: dict) -> dict:
    return {k: v for k, v in part.items() if k != "extensions" or v}


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_over_websocket_defer_sends_the_parts_as_messages(
    settings, engine, client, make_users, gql, protocol
):
    star, fan = await make_users(2, prefix="inc")
    await follow_all(gql, [fan], star)
    variables = {"u": star.username}
    async with served(settings, engine) as url:
        messages = await _over_socket(url, protocol, fan.token, DEFERRED, variables)
    first, *rest = _results(messages, protocol)
    assert first["data"] == {"user": {"username": star.username}} and first["hasNext"] is True
    assert first["pending"] == [{"id": "0", "path": ["user"], "label": "counts"}]
    later = [i for p in rest for i in p.get("incremental", ())]
    assert later == [{"data": {"followerCount": 1}, "id": "0", "path": ["user"], "label": "counts"}]
    assert rest[-1]["hasNext"] is False and rest[-1]["completed"] == [{"id": "0"}]
    # the payloads HTTP's multipart parts carry
    resp = await client.post(
        "/graphql",
        json={"query": DEFERRED, "variables": variables},
        headers={**MULTIPART, "Authorization": f"Bearer {fan.token}"},
    )
    parts = [_without_empty_extensions(p) for p in _parts(resp)]
    assert parts == [first, *rest]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_over_websocket_stream_sends_the_items_after_the_first(
    settings, engine, make_users, gql, protocol
):
    star, *fans = await make_users(4, prefix="inc")
    await follow_all(gql, fans, star)
    async with served(settings, engine) as url:
        messages = await _over_socket(url, protocol, fans[0].token, STREAMED, {"u": star.username})
    first, *rest = _results(messages, protocol)
    edges = first["data"]["user"]["followers"]["edges"]
    assert len(edges) == 1 and first["hasNext"] is True and rest, messages
    items = [item for p in rest for i in p.get("incremental", ()) for item in i.get("items", ())]
    assert {e["node"]["username"] for e in edges + items} == {f.username for f in fans}
    assert rest[-1]["hasNext"] is False


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_over_websocket_an_error_in_a_deferred_part_has_its_code(
    settings, engine, make_users, protocol
):
    someone, other = await make_users(2, prefix="inc")
    async with served(settings, engine) as url:
        messages = await _over_socket(
            url, protocol, other.token, FORBIDDEN_LATER, {"u": someone.username}
        )
    first, *rest = _results(messages, protocol)
    assert first["data"] == {"user": {"username": someone.username}} and "errors" not in first
    errors = [
        e
        for p in rest
        for key in ("incremental", "completed")
        for i in p.get(key, ())
        for e in i.get("errors", ())
    ]
    assert errors and all(e["extensions"]["code"] == "FORBIDDEN" for e in errors), messages
    assert all(e["message"] != "Internal server error." for e in errors), errors


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_over_websocket_the_document_limits_hold_as_over_http(
    settings, engine, client, make_users, protocol
):
    """A deferred document past MAX_QUERY_DEPTH is refused over a socket as over HTTP,
    before anything runs."""
    (someone,) = await make_users(1, prefix="inc")
    level = "followers(first: 1) { edges { node { %s } } }"
    selection = "... @defer { username }"
    for _ in range(5):
        selection = level % selection
    deep = f"query($u: String!) {{ user(username: $u) {{ {selection} }} }}"
    variables = {"u": someone.username}
    resp = await client.post(
        "/graphql",
        json={"query": deep, "variables": variables},
        headers={**MULTIPART, "Authorization": f"Bearer {someone.token}"},
    )
    (http_error,) = resp.json()["errors"]
    async with served(settings, engine) as url:
        (message,) = await _over_socket(url, protocol, someone.token, deep, variables)
    assert message["type"] == "error", message
    payload = message["payload"]
    error = payload[0] if isinstance(payload, list) else payload
    assert error["extensions"]["code"] == http_error["extensions"]["code"]
    assert error["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    assert error["message"] == http_error["message"]


async def test_a_fault_in_a_deferred_part_is_masked_over_http_and_websocket(
    settings, engine, client, make_users, monkeypatch
):
    """An unexpected exception inside a later part: ``INTERNAL_SERVER_ERROR`` and a
    masked message on both transports, never its own text."""
    (someone,) = await make_users(1, prefix="inc")

    def broken(*_args):
        raise RuntimeError("a secret detail")

    monkeypatch.setattr(User, "_load_count", broken)
    variables = {"u": someone.username}
    resp = await client.post(
        "/graphql", json={"query": DEFERRED, "variables": variables}, headers=MULTIPART
    )
    over_http = _parts(resp)[1:]
    async with served(settings, engine) as url:
        messages = await _over_socket(url, TRANSPORT_WS, someone.token, DEFERRED, variables)
    over_ws = _results(messages, TRANSPORT_WS)[1:]
    for later in (over_http, over_ws):
        errors = [e for p in later for c in p.get("completed", ()) for e in c.get("errors", ())]
        assert errors, later
        for error in errors:
            assert error["extensions"]["code"] == "INTERNAL_SERVER_ERROR", error
            assert error["message"] == "Internal server error.", error
