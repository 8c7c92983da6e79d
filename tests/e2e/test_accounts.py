"""Accounts over GraphQL: sign-up, log-in, refresh rotation, log-out, profile, tokens."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import sys
import uuid

import jwt
import pytest
from sqlalchemy import text

from domain.identity.tokens import hash_refresh_token
from tests.support.documents import LOG_IN, REFRESH
from tests.support.users import TEST_PASSWORD

SIGN_UP = """
mutation($input: SignUpInput!) {
  signUp(input: $input) {
    __typename
    ... on SignUpSuccess { accessToken refreshToken user { id username displayName createdAt } }
    ... on Error { message code }
    ... on ValidationError { field }
  }
}"""


VIEWER = "{ viewer { username displayName bio followerCount followingCount } }"


def _name() -> str:
    return f"acct_{uuid.uuid4().hex[:10]}"


async def _sign_up(gql, username=None, **over):
    username = username or _name()
    data = {
        "username": username,
        "email": f"{username}@example.org",
        "password": TEST_PASSWORD,
        "displayName": "Zoë Ærø",
        **over,
    }
    return (await gql(SIGN_UP, {"input": data}))["data"]["signUp"]


async def test_sign_up_then_viewer(gql):
    name = _name()
    res = await _sign_up(gql, name.upper())
    assert res["__typename"] == "SignUpSuccess"
    assert res["user"]["username"] == name  # stored lower-case
    created = res["user"]["createdAt"]
    assert created.endswith("Z") and len(created.split(".")[1]) == 7  # 6 digits + Z
    me = await gql(VIEWER, token=res["accessToken"])
    assert me["data"]["viewer"] == {
        "username": name,
        "displayName": "Zoë Ærø",
        "bio": "",
        "followerCount": 0,
        "followingCount": 0,
    }


async def test_username_taken_ignores_case(gql):
    name = _name()
    assert (await _sign_up(gql, name))["__typename"] == "SignUpSuccess"
    again = await _sign_up(gql, name.upper(), email=f"other_{name}@example.org")
    assert again["__typename"] == "UsernameTakenError"
    assert again["code"] == "USERNAME_TAKEN"


async def test_email_taken(gql):
    first = _name()
    await _sign_up(gql, first)
    again = await _sign_up(gql, _name(), email=f"{first}@example.org")
    assert again["__typename"] == "EmailTakenError"


async def test_log_in_any_case_and_wrong_password(gql):
    name = _name()
    await _sign_up(gql, name)
    ok = (await gql(LOG_IN, {"u": name.upper(), "p": TEST_PASSWORD}))["data"]["logIn"]
    assert ok["__typename"] == "LogInSuccess" and ok["user"]["username"] == name
    bad = (await gql(LOG_IN, {"u": name, "p": "wrong password!"}))["data"]["logIn"]
    assert bad == {
        "__typename": "InvalidCredentialsError",
        "code": "INVALID_CREDENTIALS",
        "message": bad["message"],
    }
    unknown = (await gql(LOG_IN, {"u": "nobody_" + name, "p": TEST_PASSWORD}))["data"]["logIn"]
    assert unknown["__typename"] == "InvalidCredentialsError"
    nul = (await gql(LOG_IN, {"u": name, "p": "x\x00y"}))["data"]["logIn"]
    assert nul["__typename"] == "InvalidCredentialsError"


async def test_refresh_rotates_and_a_late_replay_revokes_only_that_family(gql, engine):
    res = await _sign_up(gql)
    other = (await gql(LOG_IN, {"u": res["user"]["username"], "p": TEST_PASSWORD}))["data"]
    first = res["refreshToken"]
    rotated = (await gql(REFRESH, {"t": first}))["data"]["refreshSession"]
    assert rotated["__typename"] == "RefreshSessionSuccess"
    assert rotated["refreshToken"] != first
    # Within the grace window the same token gets the same successor, revoking nothing.
    again = (await gql(REFRESH, {"t": first}))["data"]["refreshSession"]
    assert again["__typename"] == "RefreshSessionSuccess"
    assert again["refreshToken"] == rotated["refreshToken"]
    assert (await gql(VIEWER, token=again["accessToken"]))["data"]["viewer"] is not None
    # Past it, the replay is theft: the whole family ends ...
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE sessions SET rotated_at = rotated_at - interval '11 seconds'"
                " WHERE token_hash = :h"
            ),
            {"h": hash_refresh_token(first)},
        )
    replayed = (await gql(REFRESH, {"t": first}))["data"]["refreshSession"]
    assert replayed["__typename"] == "InvalidTokenError"
    after = (await gql(REFRESH, {"t": rotated["refreshToken"]}))["data"]["refreshSession"]
    assert after["__typename"] == "InvalidTokenError"
    assert_unauthenticated(await gql(VIEWER, token=rotated["accessToken"]))
    # ... and only it: the other device's session lives on.
    mine = other["logIn"]
    assert (await gql(VIEWER, token=mine["accessToken"]))["data"]["viewer"] is not None
    assert (await gql(REFRESH, {"t": mine["refreshToken"]}))["data"]["refreshSession"][
        "__typename"
    ] == "RefreshSessionSuccess"


async def test_concurrent_refreshes_of_one_token_have_one_successor(gql, engine):
    res = await _sign_up(gql)
    other = (await gql(LOG_IN, {"u": res["user"]["username"], "p": TEST_PASSWORD}))["data"]
    outs = await asyncio.gather(*(gql(REFRESH, {"t": res["refreshToken"]}) for _ in range(8)))
    got = [o["data"]["refreshSession"] for o in outs]
    assert {g["__typename"] for g in got} == {"RefreshSessionSuccess"}, got
    successors = {g["refreshToken"] for g in got}
    assert len(successors) == 1
    (successor,) = successors
    sid = jwt.decode(res["accessToken"], options={"verify_signature": False})["sid"]
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                text(
                    "SELECT token_hash, rotated_at IS NOT NULL AS rotated, revoked_at"
                    " FROM sessions WHERE family_id = :f ORDER BY id"
                ),
                {"f": uuid.UUID(sid)},
            )
        ).all()
    assert [(r.token_hash, r.rotated, r.revoked_at) for r in rows] == [
        (hash_refresh_token(res["refreshToken"]), True, None),
        (hash_refresh_token(successor), False, None),
    ]
    # Every answer works, and so does the other device.
    for g in got:
        assert (await gql(VIEWER, token=g["accessToken"]))["data"]["viewer"] is not None
    assert (await gql(VIEWER, token=other["logIn"]["accessToken"]))["data"]["viewer"]
    assert (await gql(REFRESH, {"t": successor}))["data"]["refreshSession"][
        "__typename"
    ] == "RefreshSessionSuccess"


async def test_log_out_revokes_refresh_token(gql):
    res = await _sign_up(gql)
    out = await gql(
        "mutation($t: String) { logOut(input: { refreshToken: $t }) "
        "{ ... on LogOutSuccess { endedSessions revokedSessions } } }",
        {"t": res["refreshToken"]},
        token=res["accessToken"],
    )
    # endedSessions, as changePassword names it; the old name stays, deprecated
    assert out["data"]["logOut"] == {"endedSessions": 1, "revokedSessions": 1}
    again = (await gql(REFRESH, {"t": res["refreshToken"]}))["data"]["refreshSession"]
    assert again["__typename"] == "InvalidTokenError"


async def test_update_profile_validates_and_keeps_old_values(gql):
    res = await _sign_up(gql)
    tok = res["accessToken"]
    q = """mutation($i: UpdateProfileInput!) { updateProfile(input: $i) {
        __typename ... on UpdateProfileSuccess { user { displayName bio } }
        ... on ValidationError { field code } } }"""
    ok = (await gql(q, {"i": {"bio": "e\u0301" * 75}}, token=tok))["data"]["updateProfile"]
    # 150 code points before NFC, 75 after: NFC counting admits it.
    assert ok["__typename"] == "UpdateProfileSuccess" and ok["user"]["bio"] == "é" * 75
    long = (await gql(q, {"i": {"bio": "x" * 151}}, token=tok))["data"]["updateProfile"]
    assert long == {"__typename": "ValidationError", "field": "bio", "code": "VALIDATION_FAILED"}
    nul = (await gql(q, {"i": {"displayName": "a\x00b"}}, token=tok))["data"]["updateProfile"]
    assert nul["__typename"] == "ValidationError" and nul["field"] == "displayName"
    me = (await gql(VIEWER, token=tok))["data"]["viewer"]
    assert me["bio"] == "é" * 75 and me["displayName"] == "Zoë Ærø"


def assert_unauthenticated(out: dict) -> None:
    """A request refused as a whole for its token: UNAUTHENTICATED, no data."""
    assert "data" not in out, out
    assert out["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED", out


FLAGS = """query($u: String!) { user(username: $u) {
  followedByViewer followsViewer blockedWithViewer followRequestedByViewer } }"""


async def test_expired_and_forged_tokens_are_unauthenticated_401(client, gql, settings):
    res = await _sign_up(gql)
    claims = jwt.decode(res["accessToken"], options={"verify_signature": False})
    past = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)
    expired = jwt.encode({**claims, "exp": past}, settings.jwt_secret, algorithm="HS256")
    forged = jwt.encode(claims, "not-the-secret-but-as-long-as-one-000", algorithm="HS256")
    none_alg = jwt.encode(claims, None, algorithm="none")
    for token in (expired, forged, none_alg, "garbage"):
        for query, variables in ((VIEWER, {}), (FLAGS, {"u": res["user"]["username"]})):
            resp = await client.post(
                "/graphql",
                json={"query": query, "variables": variables},
                headers={"Authorization": f"Bearer {token}"},
            )
            assert resp.status_code == 401, (token, resp.text)
            assert resp.headers["www-authenticate"].startswith('Bearer error="invalid_token"')
            assert_unauthenticated(resp.json())
    # No token at all: anonymous, not an error.
    assert (await gql(VIEWER))["data"]["viewer"] is None
    # Signing in again needs no valid token: a stale one is ignored.
    again = await gql(LOG_IN, {"u": res["user"]["username"], "p": TEST_PASSWORD}, token=expired)
    assert again["data"]["logIn"]["__typename"] == "LogInSuccess"


async def test_mutation_without_token_is_unauthenticated(gql):
    out = await gql('mutation { follow(input: { userId: "x" }) { __typename } }')
    assert out["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


# --- sessions that end -------------------------------------------------------------------

CREATE_POST = """mutation($c: String!) { createPost(input: { caption: $c }) {
  __typename ... on CreatePostSuccess { post { id } } ... on Error { code } } }"""
LOG_OUT = """mutation($t: String) { logOut(input: { refreshToken: $t }) {
  ... on LogOutSuccess { endedSessions } } }"""


async def test_log_out_ends_the_access_tokens_of_its_sessions(gql):
    res = await _sign_up(gql)
    name = res["user"]["username"]
    second = (await gql(LOG_IN, {"u": name, "p": TEST_PASSWORD}))["data"]["logIn"]
    third = (await gql(LOG_IN, {"u": name, "p": TEST_PASSWORD}))["data"]["logIn"]
    for auth in (res, second, third):  # warm the session cache
        assert (await gql(VIEWER, token=auth["accessToken"]))["data"]["viewer"]
    # One session: only its tokens stop, at once.
    one = await gql(LOG_OUT, {"t": second["refreshToken"]}, token=second["accessToken"])
    assert one["data"]["logOut"] == {"endedSessions": 1}
    assert_unauthenticated(await gql(CREATE_POST, {"c": "after"}, token=second["accessToken"]))
    assert (await gql(VIEWER, token=res["accessToken"]))["data"]["viewer"]
    # All of them.
    out = await gql(LOG_OUT, {"t": None}, token=res["accessToken"])
    assert out["data"]["logOut"] == {"endedSessions": 2}
    for auth in (res, third):
        assert_unauthenticated(await gql(CREATE_POST, {"c": "after"}, token=auth["accessToken"]))
        assert_unauthenticated(await gql(VIEWER, token=auth["accessToken"]))
        assert_unauthenticated(await gql(LOG_OUT, {"t": None}, token=auth["accessToken"]))
    # Signing in again opens a new session that works.
    fresh = (await gql(LOG_IN, {"u": name, "p": TEST_PASSWORD}))["data"]["logIn"]
    assert (await gql(CREATE_POST, {"c": "back"}, token=fresh["accessToken"]))["data"][
        "createPost"
    ]["__typename"] == "CreatePostSuccess"


async def test_session_check_falls_back_to_postgres_without_the_cache(gql, settings):
    from redis.asyncio import Redis

    from adapters.session_cache import auth_key

    res = await _sign_up(gql)
    assert (await gql(VIEWER, token=res["accessToken"]))["data"]["viewer"]
    sid = jwt.decode(res["accessToken"], options={"verify_signature": False})["sub"]
    redis = Redis.from_url(settings.redis_url)
    try:
        await gql(LOG_OUT, {"t": None}, token=res["accessToken"])
        await redis.delete(auth_key(uuid.UUID(sid)))  # the cache forgot: PostgreSQL knows
        assert_unauthenticated(await gql(VIEWER, token=res["accessToken"]))
    finally:
        await redis.aclose()


LIKE = """mutation($id: ID!) { likePost(input: { postId: $id }) { __typename } }"""
COMMENT = """mutation($id: ID!, $b: String!) { addComment(input: { postId: $id, body: $b }) {
  __typename } }"""
BLOCK = """mutation($id: ID!) { block(input: { userId: $id }) { __typename } }"""
FOLLOW = """mutation($id: ID!) { follow(input: { userId: $id }) { __typename } }"""
MARK_READ = """mutation { markNotificationsRead(input: {}) { __typename } }"""
RENAME = """mutation { updateProfile(input: { displayName: "gone" }) { __typename } }"""
POST_VIEW = """query($id: ID!) { node(id: $id) { ... on Post { likeCount commentCount
  likes(first: 5) { edges { node { username } } } } } }"""


async def snapshot(engine) -> dict:
    """Every row count a use case may change, and the counters' sum."""
    tables = (
        "users",
        "sessions",
        "posts",
        "likes",
        "comments",
        "follows",
        "blocks",
        "follow_requests",
        "notifications",
        "outbox",
        "counter_shards",
    )
    async with engine.connect() as conn:
        out = {t: await conn.scalar(text(f"SELECT count(*) FROM {t}")) for t in tables}
        out["counters"] = await conn.scalar(text("SELECT sum(value) FROM counter_shards"))
        out["read_at"] = await conn.scalar(
            text("SELECT count(*) FROM notifications WHERE read_at IS NOT NULL")
        )
        out["status"] = await conn.scalar(
            text(
                "SELECT md5(string_agg(id::text || status || display_name, ',' ORDER BY id))"
                " FROM users"
            )
        )
    return out


@pytest.fixture
async def session_cache(settings):
    from redis.asyncio import Redis

    from app.sessions import session_store

    redis = Redis.from_url(settings.redis_url)
    yield session_store(redis, settings.token_config)
    await redis.aclose()


@pytest.mark.parametrize("status", ["banned", "deleted"])
async def test_a_banned_or_deleted_account_is_refused_everything(
    gql, engine, make_users, session_cache, settings, status
):
    from domain.moderation.set_user_status import set_user_status

    author, x = await make_users(2)
    post = (await gql(CREATE_POST, {"c": "hello"}, token=author.token))["data"]["createPost"]
    pid = post["post"]["id"]
    assert (await gql(VIEWER, token=x.token))["data"]["viewer"]  # cache warm: admitted
    k = settings.counter_shards
    assert await set_user_status(engine, x.id, status, counter_shards=k, sessions=session_cache)
    before = await snapshot(engine)
    attempts = [
        (LIKE, {"id": pid}),
        (COMMENT, {"id": pid, "b": f"hi @{author.username}"}),
        (BLOCK, {"id": author.gid}),
        (FOLLOW, {"id": author.gid}),
        (MARK_READ, {}),
        (LOG_OUT, {"t": None}),
        (CREATE_POST, {"c": "still here?"}),
        (RENAME, {}),
        (VIEWER, {}),
    ]
    for query, variables in attempts:
        assert_unauthenticated(await gql(query, variables, token=x.token))
    assert await snapshot(engine) == before
    seen = (await gql(POST_VIEW, {"id": pid}, token=author.token))["data"]["node"]
    assert seen == {"likeCount": 0, "commentCount": 0, "likes": {"edges": []}}
    # Signing in is refused too; reinstated, the account signs in again (new session).
    log_in = await gql(LOG_IN, {"u": x.username, "p": TEST_PASSWORD})
    assert log_in["data"]["logIn"]["__typename"] == "InvalidCredentialsError"
    if status == "banned":  # (a deleted account stays deleted)
        await set_user_status(engine, x.id, "active", counter_shards=k, sessions=session_cache)
        assert_unauthenticated(await gql(VIEWER, token=x.token))  # its old session stays ended
        back = (await gql(LOG_IN, {"u": x.username, "p": TEST_PASSWORD}))["data"]["logIn"]
        assert (await gql(VIEWER, token=back["accessToken"]))["data"]["viewer"]


async def test_an_account_banned_by_hand_cannot_post_even_before_the_cache_learns_it(
    gql, engine, make_users
):
    # A status changed in SQL, not through the use case: the cache still admits the
    # token for a while (docs/api/sessions.md "Sessions"), but createPost checks its author itself.
    (x,) = await make_users(1)
    assert (await gql(VIEWER, token=x.token))["data"]["viewer"]  # cache warm
    async with engine.begin() as conn:
        await conn.execute(text("UPDATE users SET status = 'banned' WHERE id = :u"), {"u": x.id})
    before = await snapshot(engine)
    out = await gql(CREATE_POST, {"c": "sneaky"}, token=x.token)
    assert out["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED", out
    assert out["errors"][0]["message"] == "This account is not available."
    assert await snapshot(engine) == before


async def test_roost_account_ban_ends_the_sessions(gql, make_users, settings):
    (x,) = await make_users(1)
    assert (await gql(VIEWER, token=x.token))["data"]["viewer"]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "app.cli",
        "account",
        "ban",
        x.username,
        env={
            **os.environ,
            "DATABASE_URL": settings.database_url,
            "REDIS_URL": settings.redis_url,
            "JWT_SECRET": settings.jwt_secret,
        },
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, out
    assert f"{x.username}: banned" in out.decode()
    assert_unauthenticated(await gql(VIEWER, token=x.token))
