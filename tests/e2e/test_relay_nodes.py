"""Relay's Global Object Identification (docs/api/clients.md "Relay"): every type with
a global id is a Node that ``node``/``nodes`` fetch through the rule of its other paths
(a report for moderators and its reporter, an export for its owner, a hashtag for
anyone); ids resolve with or without their base64 padding; the messages that echo a
value write it as GraphQL does (``null``, ``true``, ``"x"``)."""

from __future__ import annotations

import base64
import uuid

import pytest

from app.cli.admin import _set_role
from domain.engagement.hashtags import tag_named
from tests.support.reports import reports_dismissed_after
from tests.support.subscriptions import served
from tests.support.ws import TRANSPORT_WS, WSClient

REPORT_USER = """mutation($id: ID!) { reportUser(input: { id: $id, reason: SPAM }) {
  ... on ReportSuccess { reportId } } }"""
EXPORT = "mutation { exportMyData { export { id status } } }"
NODE = """query($id: ID!) { node(id: $id) { __typename id
  ... on Report { status subject resolvedBy { username } reportedUser { username } }
  ... on DataExport { exportStatus: status }
  ... on Hashtag { name posts(first: 1) { edges { cursor } } }
  ... on User { username } } }"""
NODES = "query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }"
HASHTAG = "query($n: String!) { hashtag(name: $n) { id name } }"
FOLLOW = """mutation($id: ID!) { follow(input: { userId: $id }) { __typename } }"""


def unpadded(gid: str) -> str:
    return gid.rstrip("=")


@pytest.fixture
async def closing_reports(engine):
    """The reports these tests file leave the shared queue when they end."""
    async with reports_dismissed_after(engine):
        yield


async def test_reports_exports_and_hashtags_are_nodes_through_their_rule(
    gql, make_users, settings, closing_reports
):
    mod, reporter, reported, other = await make_users(4, prefix="nd")
    assert await _set_role(settings, settings.database_url, mod.username, True) == 0
    rid = (await gql(REPORT_USER, {"id": reported.gid}, token=reporter.token))["data"][
        "reportUser"
    ]["reportId"]
    as_mod = (await gql(NODE, {"id": rid}, token=mod.token))["data"]["node"]
    assert as_mod == {
        "__typename": "Report",
        "id": rid,
        "status": "OPEN",
        "subject": "USER",
        "resolvedBy": None,
        "reportedUser": {"username": reported.username},
    }
    mine = (await gql(NODE, {"id": rid}, token=reporter.token))["data"]["node"]
    assert mine["__typename"] == "Report" and mine["id"] == rid
    for token in (other.token, reported.token, None):
        assert (await gql(NODE, {"id": rid}, token=token))["data"]["node"] is None

    export = (await gql(EXPORT, token=other.token))["data"]["exportMyData"]["export"]
    got = (await gql(NODE, {"id": export["id"]}, token=other.token))["data"]["node"]
    assert got == {"__typename": "DataExport", "id": export["id"], "exportStatus": "PENDING"}
    for token in (mod.token, reporter.token, None):
        assert (await gql(NODE, {"id": export["id"]}, token=token))["data"]["node"] is None

    word = f"café{uuid.uuid4().hex[:8]}"  # a tag no other test posts with
    tag = (await gql(HASHTAG, {"n": "#" + word.capitalize()}))["data"]["hashtag"]
    assert tag["name"] == tag_named(word)
    assert (await gql(HASHTAG, {"n": word.upper()}))["data"]["hashtag"]["id"] == tag["id"]
    node = (await gql(NODE, {"id": tag["id"]}))["data"]["node"]
    assert node == {
        "__typename": "Hashtag",
        "id": tag["id"],
        "name": tag["name"],
        "posts": {"edges": []},
    }
    not_a_tag = base64.b64encode(b"Hashtag:no such tag").decode()
    assert (await gql(NODE, {"id": not_a_tag}))["data"]["node"] is None

    ids = [rid, export["id"], tag["id"], reported.gid, not_a_tag]
    listed = (await gql(NODES, {"ids": ids}, token=other.token))["data"]["nodes"]
    assert [n and n["__typename"] for n in listed] == [
        None,
        "DataExport",
        "Hashtag",
        "User",
        None,
    ]
    as_mod = (await gql(NODES, {"ids": ids}, token=mod.token))["data"]["nodes"]
    assert [n and n["__typename"] for n in as_mod] == ["Report", None, "Hashtag", "User", None]


async def test_a_report_node_follows_the_rule_over_websocket(
    engine, gql, make_users, settings, closing_reports
):
    reporter, reported, other = await make_users(3, prefix="nw")
    rid = (await gql(REPORT_USER, {"id": reported.gid}, token=reporter.token))["data"][
        "reportUser"
    ]["reportId"]
    async with served(settings, engine) as url:
        for user, visible in ((reporter, True), (other, False)):
            client = await WSClient.open(url, TRANSPORT_WS, user.token)
            try:
                await client.subscribe(NODE, {"id": unpadded(rid)})
                got = await client.next()
                assert "errors" not in got, got
                node = got["data"]["node"]
                assert (node and node["id"]) == (rid if visible else None)
            finally:
                await client.close()


async def test_ids_without_their_padding_resolve(gql, make_users):
    me, star = await make_users(2, prefix="np")
    padded = star.gid
    assert padded.endswith("="), "pick a type and UUID whose id has padding"
    for gid in (padded, unpadded(padded), padded.replace("+", "-").replace("/", "_")):
        node = (await gql(NODE, {"id": gid}))["data"]["node"]
        assert node == {"__typename": "User", "id": padded, "username": star.username}
    listed = (await gql(NODES, {"ids": [unpadded(padded), me.gid]}))["data"]["nodes"]
    assert [n["id"] for n in listed] == [padded, me.gid]
    out = await gql(FOLLOW, {"id": unpadded(padded)}, token=me.token)
    assert out == {"data": {"follow": {"__typename": "FollowSuccess"}}}
    for bad in (padded + "==", "***", unpadded(padded)[:-1]):
        assert (await gql(NODE, {"id": bad}))["data"]["node"] is None


async def test_messages_echo_values_as_graphql_writes_them(gql, make_users):
    (me,) = await make_users(1, prefix="nm")
    cases = [
        ("query($n: Int) { viewer { id } nodes(ids: [$n]) { id } }", {"n": None}),
        ("query($ids: [ID!]!) { nodes(ids: $ids) { id } }", {"ids": [None]}),
        ("query($n: Int!) { viewer { followers(first: $n) { totalCount } } }", {"n": None}),
        ("query($n: Int!) { viewer { followers(first: $n) { totalCount } } }", {"n": True}),
        ("query($n: Int!) { viewer { followers(first: $n) { totalCount } } }", {"n": "x"}),
        ("{ nodes(ids: null) { id } }", {}),
    ]
    messages = []
    for query, variables in cases:
        out = await gql(query, variables, token=me.token)
        messages += [e["message"] for e in out["errors"]]
    assert len(messages) >= len(cases)
    for m in messages:
        assert "None" not in m and "True" not in m and "'x'" not in m, m
    joined = "\n".join(messages)
    assert "not to be null" in joined and ": true" in joined and '"x"' in joined
