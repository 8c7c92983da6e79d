"""Reports and moderation (docs/api/moderation.md "Reports and moderation"): anyone reports
a post or an account (idempotent per reporter and target); moderators (`roost admin
grant-moderator`) read the queue and ban, remove and resolve, through the visibility
rule and with exact counts; everyone else is refused, over HTTP and WebSocket alike."""

from __future__ import annotations

import uuid

import pytest
from redis.asyncio import Redis
from sqlalchemy import text

from adapters.feedstore.stores import feed_stores
from app.cli.admin import _set_role
from domain.counters.verify import verify_counts
from domain.feed.graph_events import merge_author_into_feed
from domain.posts.create_post import create_post
from domain.social.follow_user import follow_user
from schema.ids import to_global_id
from tests.support.subscriptions import served
from tests.support.ws import LEGACY_WS, TRANSPORT_WS, WSClient

REPORT_POST = """mutation($id: ID!, $r: ReportReason!, $n: String) {
  reportPost(input: { id: $id, reason: $r, note: $n }) { __typename
    ... on ReportSuccess { reportId reason note }
    ... on Error { code } ... on ValidationError { field } } }"""
REPORT_USER = """mutation($id: ID!, $r: ReportReason!, $n: String) {
  reportUser(input: { id: $id, reason: $r, note: $n }) { __typename
    ... on ReportSuccess { reportId reason note }
    ... on Error { code } ... on ValidationError { field } } }"""
QUEUE = """query($s: ReportStatus, $n: Int, $a: String) { moderation { ... on Moderation {
  reports(status: $s, first: $n, after: $a) {
    edges { cursor node { id subject reason note status
      reporter { username } reportedUser { username } post { caption } resolvedBy { username } } }
    pageInfo { hasNextPage endCursor } } } } }"""
BAN = """mutation($id: ID!) { banUser(input: { userId: $id }) { __typename
  ... on BanUserSuccess { banned resolvedReports } ... on Error { code } } }"""
REMOVE = """mutation($id: ID!) { removePost(input: { postId: $id }) { __typename
  ... on RemovePostSuccess { removed resolvedReports } ... on Error { code } } }"""
RESOLVE = """mutation($id: ID!, $s: ReportResolution!) {
  resolveReport(input: { reportId: $id, status: $s }) { __typename
    ... on ResolveReportSuccess { report { status resolvedBy { username } } }
    ... on Error { code } } }"""
PROFILE = "query($u: String!) { user(username: $u) { followerCount postCount } }"
NODE = "query($id: ID!) { node(id: $id) { id } }"
MODERATION = """{ moderation { __typename ... on Moderation { reports(first: 1) {
  edges { node { id } } } } ... on Error { code } } }"""


async def grant(settings, user, on: bool = True) -> None:
    assert await _set_role(settings, settings.database_url, user.username, on) == 0


async def operation(client: WSClient, query: str, variables: dict | None = None) -> dict:
    """Run a query or mutation over the socket: its one result, then its completion."""
    await client.subscribe(query, variables)
    result = await client.next()
    assert (await client.message())["type"] == "complete"
    return result


@pytest.fixture
async def redis(settings):
    r = Redis.from_url(settings.redis_url)
    yield r
    await r.aclose()


async def test_reports_are_idempotent_per_reporter_and_target(gql, engine, make_users, settings):
    k = settings.counter_shards
    me, author, secret = await make_users(3, prefix="rp")
    post = to_global_id(
        "Post", (await create_post(engine, author.id, caption="x", counter_shards=k)).id
    )
    first = (await gql(REPORT_POST, {"id": post, "r": "SPAM"}, token=me.token))["data"]
    again = (
        await gql(REPORT_POST, {"id": post, "r": "HARASSMENT", "n": "it goes on"}, token=me.token)
    )["data"]
    assert first["reportPost"]["__typename"] == "ReportSuccess"
    assert again["reportPost"]["reportId"] == first["reportPost"]["reportId"]
    assert (again["reportPost"]["reason"], again["reportPost"]["note"]) == (
        "HARASSMENT",
        "it goes on",
    )
    user = (await gql(REPORT_USER, {"id": author.gid, "r": "IMPERSONATION"}, token=me.token))[
        "data"
    ]
    twice = (await gql(REPORT_USER, {"id": author.gid, "r": "IMPERSONATION"}, token=me.token))[
        "data"
    ]
    assert user["reportUser"]["reportId"] == twice["reportUser"]["reportId"]
    assert user["reportUser"]["reportId"] != first["reportPost"]["reportId"]
    async with engine.connect() as conn:
        assert (
            await conn.scalar(
                text("SELECT count(*) FROM reports WHERE reporter_id = :m"), {"m": me.id}
            )
            == 2
        )

    own = (await gql(REPORT_POST, {"id": post, "r": "SPAM"}, token=author.token))["data"]
    assert own["reportPost"] == {
        "__typename": "ValidationError",
        "code": "VALIDATION_FAILED",
        "field": "id",
    }
    self_ = (await gql(REPORT_USER, {"id": me.gid, "r": "SPAM"}, token=me.token))["data"]
    assert self_["reportUser"]["field"] == "id"
    long = (
        await gql(REPORT_USER, {"id": author.gid, "r": "OTHER", "n": "x" * 1001}, token=me.token)
    )["data"]
    assert long["reportUser"]["field"] == "note"
    # A post one cannot see cannot be reported.
    async with engine.begin() as conn:
        await conn.execute(
            text("UPDATE users SET is_private = true WHERE id = :s"), {"s": secret.id}
        )
    hidden = to_global_id(
        "Post", (await create_post(engine, secret.id, caption="private", counter_shards=k)).id
    )
    out = (await gql(REPORT_POST, {"id": hidden, "r": "SPAM"}, token=me.token))["data"]
    assert out["reportPost"] == {"__typename": "NotFoundError", "code": "NOT_FOUND"}


async def test_only_moderators_read_the_queue_and_act_over_http(gql, engine, make_users, settings):
    me, other = await make_users(2, prefix="nm")
    refused = {"__typename": "ForbiddenError", "code": "FORBIDDEN"}
    out = await gql(MODERATION, token=me.token)
    assert out == {"data": {"moderation": refused}}
    assert await gql(MODERATION) == {"data": {"moderation": refused}}  # anonymous
    for query, variables in [
        (BAN, {"id": other.gid}),
        (REMOVE, {"id": to_global_id("Post", uuid.uuid4())}),
        (RESOLVE, {"id": to_global_id("Report", uuid.uuid4()), "s": "DISMISSED"}),
    ]:
        data = (await gql(query, variables, token=me.token))["data"]
        assert next(iter(data.values())) == {"__typename": "ForbiddenError", "code": "FORBIDDEN"}
    # The role is read at each use: granted, then revoked, at once.
    await grant(settings, me)
    granted = await gql(MODERATION, token=me.token)
    assert granted["data"]["moderation"]["__typename"] == "Moderation", granted
    await grant(settings, me, on=False)
    assert (await gql(MODERATION, token=me.token))["data"]["moderation"] == refused


async def test_only_moderators_read_the_queue_and_act_over_websocket(engine, make_users, settings):
    me, mod = await make_users(2, prefix="nw")
    await grant(settings, mod)
    async with served(settings, engine) as url:
        # The legacy protocol runs queries too, under the same rule.
        for user, expected in ((me, "ForbiddenError"), (mod, "Moderation")):
            client = await WSClient.open(url, LEGACY_WS, user.token)
            try:
                got = await operation(client, MODERATION)
                assert got["data"]["moderation"]["__typename"] == expected, got
            finally:
                await client.close()
        for user, allowed in ((me, False), (mod, True)):
            client = await WSClient.open(url, TRANSPORT_WS, user.token)
            try:
                got = await operation(client, MODERATION)
                assert "errors" not in got, got
                expected = "Moderation" if allowed else "ForbiddenError"
                assert got["data"]["moderation"]["__typename"] == expected
                target = me.gid if user is mod else mod.gid
                acted = (await operation(client, BAN, {"id": target}))["data"]["banUser"]
                assert acted["__typename"] == ("BanUserSuccess" if allowed else "ForbiddenError")
            finally:
                await client.close()


async def test_moderators_ban_remove_and_resolve_through_the_rule_with_exact_counts(
    gql, engine, make_users, settings, worker, redis
):
    k = settings.counter_shards
    mod, troll, fan, private, r1, r2 = await make_users(6, prefix="mo")
    await grant(settings, mod)
    stores = feed_stores(redis, settings.feed_config)
    await follow_user(engine, troll.id, fan.id, counter_shards=k)
    await follow_user(engine, fan.id, private.id, counter_shards=k)
    async with engine.begin() as conn:
        await conn.execute(
            text("UPDATE users SET is_private = true WHERE id = :p"), {"p": private.id}
        )
    bad = await create_post(engine, private.id, caption="reported, private", counter_shards=k)
    bad_gid = to_global_id("Post", bad.id)
    # Queue: three reports, oldest first.
    await gql(REPORT_USER, {"id": troll.gid, "r": "HARASSMENT", "n": "mean"}, token=r1.token)
    await gql(REPORT_POST, {"id": bad_gid, "r": "SPAM"}, token=fan.token)
    await gql(REPORT_USER, {"id": troll.gid, "r": "SPAM"}, token=r2.token)

    pages, after = [], None
    while True:
        page = (await gql(QUEUE, {"n": 2, "a": after}, token=mod.token))["data"]["moderation"][
            "reports"
        ]
        pages.append(page["edges"])
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    mine = [
        e["node"]
        for edges in pages
        for e in edges
        if e["node"]["reporter"]
        and e["node"]["reporter"]["username"] in (r1.username, fan.username, r2.username)
    ]
    assert [(n["subject"], n["reporter"]["username"]) for n in mine] == [
        ("USER", r1.username),
        ("POST", fan.username),
        ("USER", r2.username),
    ]
    # The moderator sees the reported private post though not a follower of its author.
    assert mine[1]["post"] == {"caption": "reported, private"}
    assert mine[1]["reportedUser"] == {"username": private.username}
    assert (await gql(NODE, {"id": bad_gid}, token=mod.token))["data"]["node"] is None

    # banUser: hidden, out of every count, sessions ended, both reports actioned.
    assert (await gql(PROFILE, {"u": fan.username}))["data"]["user"]["followerCount"] == 1
    out = (await gql(BAN, {"id": troll.gid}, token=mod.token))["data"]["banUser"]
    assert out == {"__typename": "BanUserSuccess", "banned": True, "resolvedReports": 2}
    assert (await gql(PROFILE, {"u": troll.username}))["data"]["user"] is None
    assert (await gql(PROFILE, {"u": fan.username}))["data"]["user"]["followerCount"] == 0
    assert (await gql("{ viewer { id } }", token=troll.token))["errors"][0]["extensions"][
        "code"
    ] == "UNAUTHENTICATED"
    again = (await gql(BAN, {"id": troll.gid}, token=mod.token))["data"]["banUser"]
    assert again == {"__typename": "BanUserSuccess", "banned": False, "resolvedReports": 0}
    assert (await gql(BAN, {"id": mod.gid}, token=mod.token))["data"]["banUser"][
        "__typename"
    ] == "ValidationError"
    other_mod = await _make_mod(settings, make_users)
    assert (await gql(BAN, {"id": other_mod.gid}, token=mod.token))["data"]["banUser"][
        "__typename"
    ] == "ForbiddenError"

    # removePost: gone for everyone, out of its follower's cached feed, counted, actioned.
    assert "errors" not in await gql("{ viewer { feed { edges { cursor } } } }", token=fan.token)
    await merge_author_into_feed(engine, stores, settings.feed_config, fan.id, private.id)
    assert await redis.zscore(stores.feeds.key(fan.id), bad.id.bytes) is not None
    out = (await gql(REMOVE, {"id": bad_gid}, token=mod.token))["data"]["removePost"]
    assert out == {"__typename": "RemovePostSuccess", "removed": True, "resolvedReports": 1}
    await worker.drain()
    assert await redis.zscore(stores.feeds.key(fan.id), bad.id.bytes) is None
    assert (await gql(NODE, {"id": bad_gid}, token=private.token))["data"]["node"] is None
    assert (await gql(PROFILE, {"u": private.username}, token=private.token))["data"]["user"][
        "postCount"
    ] == 0
    again = (await gql(REMOVE, {"id": bad_gid}, token=mod.token))["data"]["removePost"]
    assert again == {"__typename": "RemovePostSuccess", "removed": False, "resolvedReports": 0}
    report = await verify_counts(engine)
    involved = {mod.id, troll.id, fan.id, private.id, r1.id, r2.id, bad.id}
    assert [d for d in report.drift if d.entity_id in involved] == []

    # resolveReport: a new report dismissed, listed under DISMISSED.
    rid = (await gql(REPORT_USER, {"id": fan.gid, "r": "OTHER"}, token=r1.token))["data"][
        "reportUser"
    ]["reportId"]
    out = (await gql(RESOLVE, {"id": rid, "s": "DISMISSED"}, token=mod.token))["data"]
    assert out["resolveReport"] == {
        "__typename": "ResolveReportSuccess",
        "report": {"status": "DISMISSED", "resolvedBy": {"username": mod.username}},
    }
    dismissed = (await gql(QUEUE, {"s": "DISMISSED", "n": 100}, token=mod.token))["data"]
    assert rid in [e["node"]["id"] for e in dismissed["moderation"]["reports"]["edges"]]
    actioned = (await gql(QUEUE, {"s": "ACTIONED", "n": 100}, token=mod.token))["data"]
    statuses = {
        e["node"]["reporter"]["username"]
        for e in actioned["moderation"]["reports"]["edges"]
        if e["node"]["reporter"]
    }
    assert {r1.username, r2.username, fan.username} <= statuses


async def _make_mod(settings, make_users):
    (user,) = await make_users(1, prefix="mo")
    await grant(settings, user)
    return user


@pytest.mark.parametrize(
    ("document", "field", "variables"),
    [
        (BAN, "banUser", {"id": "not-an-id"}),
        (BAN, "banUser", {"id": "UG9zdDox"}),  # a global id of another type
        (REMOVE, "removePost", {"id": "not-an-id"}),
        (RESOLVE, "resolveReport", {"id": "not-an-id", "s": "DISMISSED"}),
    ],
)
async def test_moderator_mutations_check_the_role_before_the_input(
    gql, make_users, document, field, variables
):
    """A non-moderator is FORBIDDEN whatever the input: the role comes first."""
    (anyone,) = await make_users(1)
    out = await gql(document, variables, token=anyone.token)
    assert out["data"][field]["code"] == "FORBIDDEN", out


async def test_banning_oneself_is_forbidden_for_a_non_moderator(gql, make_users):
    (anyone,) = await make_users(1)
    out = await gql(BAN, {"id": anyone.gid}, token=anyone.token)
    assert out["data"]["banUser"]["code"] == "FORBIDDEN", out
