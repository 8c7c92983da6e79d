"""@defer and @stream over HTTP (multipart/mixed, graphql-core 3.3's incremental format:
``pending``, ``incremental``, ``completed``): the parts as sent, a typed code on an
error inside a deferred part, and a clear 406 for a client that does not accept
multipart. Apollo Client reading them: tests/e2e/test_real_clients.py."""

from __future__ import annotations

import json

import pytest

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


@pytest.mark.parametrize("protocol", [TRANSPORT_WS, LEGACY_WS])
async def test_over_websocket_it_is_refused_saying_why(settings, engine, make_users, protocol):
    (someone,) = await make_users(1, prefix="inc")
    async with served(settings, engine) as url:
        ws = await WSClient.open(url, protocol, someone.token)
        try:
            await ws.subscribe("query { viewer { username ... @defer { followerCount } } }")
            msg = await ws.message()
        finally:
            await ws.close()
    assert msg["type"] == "error", msg
    payload = msg["payload"]
    error = payload[0] if isinstance(payload, list) else payload
    assert error["extensions"]["code"] == "BAD_REQUEST" and "multipart/mixed" in error["message"]
