"""The account lifecycle over GraphQL (docs/api/account-lifecycle.md "Account lifecycle"):
changePassword ends the other sessions and keeps this one; deleteAccount hides the
account at once and ends its sessions, logIn then answers ACCOUNT_PENDING_DELETION,
cancelAccountDeletion (no token) restores it with its counts within the grace period;
exportMyData is prepared by the worker and downloaded through a signed, expiring
link."""

from __future__ import annotations

import asyncio
import datetime as dt
import gzip
import json
import time
import uuid

import httpx
from sqlalchemy import text

from app.asgi import create_app
from domain.accounts.export_links import ExportLinkSigner
from domain.accounts.request_export import request_export
from domain.engagement.add_comment import add_comment
from domain.engagement.like_post import like_post
from domain.posts.create_post import create_post
from domain.social.block_user import block_user
from domain.social.follow_user import follow_user
from domain.social.mute_user import mute_user
from schema.ids import to_global_id
from tests.support.actions import fcm_token, register
from tests.support.documents import LOG_IN, REFRESH
from tests.support.polling import PATIENCE_S
from tests.support.users import TEST_PASSWORD

CHANGE = """mutation($c: String!, $n: String!) {
  changePassword(input: { currentPassword: $c, newPassword: $n }) {
    __typename ... on ChangePasswordSuccess { endedSessions }
    ... on Error { code message } ... on ValidationError { field }
    ... on WrongPasswordError { field } } }"""
DELETE = """mutation($p: String!) { deleteAccount(input: { password: $p }) {
  __typename ... on DeleteAccountSuccess { deletionDueAt }
  ... on Error { code } ... on WrongPasswordError { field } } }"""
CANCEL = """mutation($u: String!, $p: String!) {
  cancelAccountDeletion(input: { username: $u, password: $p }) {
    __typename ... on CancelAccountDeletionSuccess { accessToken user { username } }
    ... on Error { code } } }"""
LOG_IN_PENDING = """mutation($u: String!, $p: String!) {
  logIn(input: { username: $u, password: $p }) {
    __typename ... on AccountPendingDeletionError { code deletionDueAt }
    ... on Error { code } } }"""
VIEWER = "{ viewer { username followerCount followingCount } }"
USER = "query($u: String!) { user(username: $u) { followerCount followingCount } }"
NODE = "query($id: ID!) { node(id: $id) { id ... on Post { likeCount } } }"
EXPORT = """mutation { exportMyData { export { id status url requestedAt } } }"""
MY_EXPORT = "{ viewer { dataExport { id status url sizeBytes expiresAt } } }"


async def sessions_of(gql, username: str, n: int) -> list[dict]:
    out = []
    for _ in range(n):
        r = (await gql(LOG_IN, {"u": username, "p": TEST_PASSWORD}))["data"]["logIn"]
        assert r["__typename"] == "LogInSuccess", r
        out.append(r)
    return out


def unauthenticated(out: dict) -> bool:
    return out.get("errors", [{}])[0].get("extensions", {}).get("code") == "UNAUTHENTICATED"


async def test_change_password_ends_every_other_session_and_keeps_this_one(gql, engine, make_users):
    (u,) = await make_users(1, prefix="pw")
    here, other = await sessions_of(gql, u.username, 2)
    kept, gone = fcm_token(), fcm_token()
    await register(gql, here["accessToken"], kept)
    await register(gql, other["accessToken"], gone)

    wrong = await gql(CHANGE, {"c": "not my password", "n": "brand new secret"}, token=u.token)
    assert wrong["data"]["changePassword"] == {
        "__typename": "WrongPasswordError",
        "code": "WRONG_PASSWORD",
        "message": "The password is incorrect.",
        "field": "currentPassword",
    }
    short = await gql(CHANGE, {"c": TEST_PASSWORD, "n": "short"}, token=u.token)
    assert short["data"]["changePassword"]["field"] == "newPassword"
    assert "errors" not in await gql(VIEWER, token=other["accessToken"])  # nothing changed

    out = await gql(
        CHANGE, {"c": TEST_PASSWORD, "n": "brand new secret"}, token=here["accessToken"]
    )
    assert out["data"]["changePassword"] == {
        "__typename": "ChangePasswordSuccess",
        "endedSessions": 2,  # make_users' session and `other`
    }
    assert (await gql(VIEWER, token=here["accessToken"]))["data"]["viewer"]["username"]
    assert unauthenticated(await gql(VIEWER, token=other["accessToken"]))
    assert unauthenticated(await gql(VIEWER, token=u.token))
    refreshed = await gql(REFRESH, {"t": other["refreshToken"]})
    assert refreshed["data"]["refreshSession"]["__typename"] == "InvalidTokenError"
    async with engine.connect() as conn:
        tokens = set(
            (
                await conn.scalars(
                    text("SELECT token FROM device_tokens WHERE user_id = :u"), {"u": u.id}
                )
            ).all()
        )
    assert tokens == {kept}
    old = await gql(LOG_IN, {"u": u.username, "p": TEST_PASSWORD})
    assert old["data"]["logIn"]["__typename"] == "InvalidCredentialsError"
    new = await gql(LOG_IN, {"u": u.username, "p": "brand new secret"})
    assert new["data"]["logIn"]["__typename"] == "LogInSuccess"


async def test_delete_account_hides_it_at_once_and_cancelling_brings_it_back(
    gql, engine, make_users, settings
):
    k = settings.counter_shards
    x, fan, star = await make_users(3, prefix="del")
    await follow_user(engine, fan.id, x.id, counter_shards=k)
    await follow_user(engine, x.id, star.id, counter_shards=k)
    post = await create_post(engine, star.id, caption="star's", counter_shards=k)
    await like_post(engine, x.id, post.id, counter_shards=k)
    x_post = await create_post(engine, x.id, caption="x's", counter_shards=k)
    star_post, own_post = to_global_id("Post", post.id), to_global_id("Post", x_post.id)

    wrong = await gql(DELETE, {"p": "nope nope nope"}, token=x.token)
    assert wrong["data"]["deleteAccount"] == {
        "__typename": "WrongPasswordError",
        "code": "WRONG_PASSWORD",
        "field": "password",
    }
    assert (await gql(USER, {"u": x.username}))["data"]["user"] is not None

    out = await gql(DELETE, {"p": TEST_PASSWORD}, token=x.token)
    assert out["data"]["deleteAccount"]["__typename"] == "DeleteAccountSuccess", out
    due = dt.datetime.fromisoformat(out["data"]["deleteAccount"]["deletionDueAt"])
    in_30_days = dt.datetime.now(dt.UTC) + dt.timedelta(days=30)
    assert abs((due - in_30_days).total_seconds()) < 120
    # Gone at once, on every edge: its token, its profile, its post, its like, its follows.
    assert unauthenticated(await gql(VIEWER, token=x.token))
    assert (await gql(USER, {"u": x.username}))["data"]["user"] is None
    assert (await gql(NODE, {"id": own_post}, token=fan.token))["data"]["node"] is None
    assert (await gql(NODE, {"id": star_post}, token=fan.token))["data"]["node"]["likeCount"] == 0
    assert (await gql(USER, {"u": fan.username}))["data"]["user"]["followingCount"] == 0
    assert (await gql(USER, {"u": star.username}))["data"]["user"]["followerCount"] == 0

    # Signing in says why, only with the right password.
    pending = (await gql(LOG_IN_PENDING, {"u": x.username, "p": TEST_PASSWORD}))["data"]["logIn"]
    assert pending["__typename"] == "AccountPendingDeletionError"
    assert pending["code"] == "ACCOUNT_PENDING_DELETION"
    assert dt.datetime.fromisoformat(pending["deletionDueAt"]) == due
    bad = (await gql(LOG_IN_PENDING, {"u": x.username, "p": "wrong wrong"}))["data"]["logIn"]
    assert bad == {"__typename": "InvalidCredentialsError", "code": "INVALID_CREDENTIALS"}

    # Cancelling needs no token, and the password.
    refused = await gql(CANCEL, {"u": x.username, "p": "wrong wrong"})
    assert refused["data"]["cancelAccountDeletion"]["__typename"] == "InvalidCredentialsError"
    back = (await gql(CANCEL, {"u": x.username.upper(), "p": TEST_PASSWORD}))["data"]
    assert back["cancelAccountDeletion"]["__typename"] == "CancelAccountDeletionSuccess"
    token = back["cancelAccountDeletion"]["accessToken"]
    me = (await gql(VIEWER, token=token))["data"]["viewer"]
    assert (me["followerCount"], me["followingCount"]) == (1, 1)
    assert (await gql(NODE, {"id": star_post}, token=fan.token))["data"]["node"]["likeCount"] == 1
    assert (await gql(NODE, {"id": own_post}, token=fan.token))["data"]["node"] is not None
    assert (await gql(USER, {"u": star.username}))["data"]["user"]["followerCount"] == 1
    again = (await gql(CANCEL, {"u": x.username, "p": TEST_PASSWORD}))["data"]
    assert again["cancelAccountDeletion"]["__typename"] == "CancelAccountDeletionSuccess"
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text("SELECT status, deletion_due_at FROM users WHERE id = :u"), {"u": x.id}
            )
        ).one()
    assert tuple(row) == ("active", None)

    # Past the grace period, nothing restores it.
    out = await gql(DELETE, {"p": TEST_PASSWORD}, token=token)
    assert out["data"]["deleteAccount"]["__typename"] == "DeleteAccountSuccess"
    async with engine.begin() as conn:
        await conn.execute(
            text("UPDATE users SET deletion_due_at = now() - interval '1 second' WHERE id = :u"),
            {"u": x.id},
        )
    late = await gql(CANCEL, {"u": x.username, "p": TEST_PASSWORD})
    assert late["data"]["cancelAccountDeletion"]["__typename"] == "InvalidCredentialsError"
    late = await gql(LOG_IN_PENDING, {"u": x.username, "p": TEST_PASSWORD})
    assert late["data"]["logIn"]["__typename"] == "InvalidCredentialsError"


async def test_cancelling_and_deleting_charge_the_sign_in_budget(settings, engine, make_users):
    (u,) = await make_users(1, prefix="bud")
    app = create_app(
        settings.model_copy(update={"rate_limit_enabled": True, "rate_limit_auth": 2}),
        engine=engine,
    )
    transport = httpx.ASGITransport(app=app, client=(f"10.9.{uuid.uuid4().int % 250}.7", 4000))
    async with httpx.AsyncClient(transport=transport, base_url="http://roost.test") as client:
        codes = []
        for query, variables, token in [
            (CANCEL, {"u": u.username, "p": "wrong wrong"}, None),
            (CHANGE, {"c": "wrong wrong", "n": "whatever else"}, u.token),
            (DELETE, {"p": "wrong wrong"}, u.token),
        ]:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            resp = await client.post(
                "/graphql", json={"query": query, "variables": variables}, headers=headers
            )
            codes.append(resp.status_code)
    assert codes == [200, 200, 429]


async def test_export_my_data_is_prepared_by_the_worker_and_downloaded_by_a_signed_link(
    gql, client, engine, make_users, settings, worker
):
    k = settings.counter_shards
    me, friend, pest, bore = await make_users(4, prefix="exp")
    await follow_user(engine, me.id, friend.id, counter_shards=k)
    await follow_user(engine, friend.id, me.id, counter_shards=k)
    mine = await create_post(engine, me.id, caption="my words #archive", counter_shards=k)
    theirs = await create_post(engine, friend.id, caption="a friend's post", counter_shards=k)
    await like_post(engine, me.id, theirs.id, counter_shards=k)
    await add_comment(engine, me.id, theirs.id, "my comment", counter_shards=k)
    await like_post(engine, friend.id, mine.id, counter_shards=k)
    await block_user(engine, me.id, pest.id, counter_shards=k)
    await mute_user(engine, me.id, bore.id, counter_shards=k)
    await worker.drain()

    # Asked twice at once: one export.
    a, b = await asyncio.gather(request_export(engine, me.id), request_export(engine, me.id))
    assert a.id == b.id and a.status == "pending"
    out = (await gql(EXPORT, token=me.token))["data"]["exportMyData"]["export"]
    assert out["url"] is None or out["status"] == "READY"
    deadline = time.monotonic() + PATIENCE_S
    while True:
        got = (await gql(MY_EXPORT, token=me.token))["data"]["viewer"]["dataExport"]
        if got["status"] == "READY":
            break
        assert time.monotonic() < deadline, got
        await asyncio.sleep(0.05)
    assert got["sizeBytes"] > 0 and got["url"].startswith("http://roost.test/exports/")
    # Only the owner reads it.
    other = await gql(
        "query($u: String!) { user(username: $u) { dataExport { id } } }",
        {"u": me.username},
        token=friend.token,
    )
    assert other["data"]["user"]["dataExport"] is None
    assert other["errors"][0]["extensions"]["code"] == "FORBIDDEN"

    resp = await client.get(got["url"])  # no token: the link is the capability
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "application/gzip"
    assert resp.headers["content-disposition"].startswith("attachment;")
    assert int(resp.headers["content-length"]) == got["sizeBytes"] == len(resp.content)
    archive = json.loads(gzip.decompress(resp.content))
    assert archive["format"] == "roost-export/1"
    assert archive["profile"]["username"] == me.username
    assert [p["caption"] for p in archive["posts"]] == ["my words #archive"]
    assert archive["posts"][0]["media"] == []
    for stamp in (
        archive["exportedAt"],
        archive["profile"]["createdAt"],
        archive["likes"][0]["createdAt"],
    ):
        assert dt.datetime.fromisoformat(stamp).utcoffset() == dt.timedelta(0) and stamp.endswith(
            "Z"
        )
    assert [c["body"] for c in archive["comments"]] == ["my comment"]
    assert [x["postId"] for x in archive["likes"]] == [str(theirs.id)]
    assert [x["username"] for x in archive["following"]] == [friend.username]
    assert [x["username"] for x in archive["followers"]] == [friend.username]
    assert [x["username"] for x in archive["blocks"]] == [pest.username]
    assert [x["username"] for x in archive["mutes"]] == [bore.username]
    kinds = sorted(n["kind"] for n in archive["notifications"])
    assert kinds == ["follow", "like"]

    # A link is for one archive and a short time.
    url = httpx.URL(got["url"])
    export_id = uuid.UUID(url.path.rsplit("/", 1)[1])
    forged = url.copy_set_param("signature", "0" * 64)
    assert (await client.get(forged)).status_code == 403
    signer = ExportLinkSigner(settings.jwt_secret)
    expired = signer.path(export_id, ttl_s=-1)
    resp = await client.get(expired)
    assert resp.status_code == 410 and resp.json()["error"]["code"] == "LINK_EXPIRED"
    unknown = signer.path(uuid.uuid4(), ttl_s=60)
    assert (await client.get(unknown)).status_code == 404
    assert (await client.get(f"/exports/{export_id}?expires=soon")).status_code == 400
