"""Accounts over GraphQL: sign-up, log-in, refresh rotation, log-out, profile, tokens."""

from __future__ import annotations

import datetime as dt
import uuid

import jwt

from tests.conftest import TEST_PASSWORD

SIGN_UP = """
mutation($input: SignUpInput!) {
  signUp(input: $input) {
    __typename
    ... on SignUpSuccess { accessToken refreshToken user { id username displayName createdAt } }
    ... on Error { message code }
    ... on ValidationError { field }
  }
}"""

LOG_IN = """
mutation($u: String!, $p: String!) {
  logIn(input: { username: $u, password: $p }) {
    __typename
    ... on LogInSuccess { accessToken refreshToken user { username } }
    ... on Error { code message }
  }
}"""

REFRESH = """
mutation($t: String!) {
  refreshSession(input: { refreshToken: $t }) {
    __typename
    ... on RefreshSessionSuccess { accessToken refreshToken }
    ... on Error { code }
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


async def test_refresh_rotates_and_reuse_revokes_everything(gql):
    res = await _sign_up(gql)
    first = res["refreshToken"]
    rotated = (await gql(REFRESH, {"t": first}))["data"]["refreshSession"]
    assert rotated["__typename"] == "RefreshSessionSuccess"
    assert rotated["refreshToken"] != first
    # The old token was used once: presenting it again is refused ...
    reused = (await gql(REFRESH, {"t": first}))["data"]["refreshSession"]
    assert reused["__typename"] == "InvalidTokenError"
    # ... and, as a sign of theft, revokes the rotated one too.
    after = (await gql(REFRESH, {"t": rotated["refreshToken"]}))["data"]["refreshSession"]
    assert after["__typename"] == "InvalidTokenError"


async def test_log_out_revokes_refresh_token(gql):
    res = await _sign_up(gql)
    out = await gql(
        "mutation($t: String) { logOut(input: { refreshToken: $t }) "
        "{ ... on LogOutSuccess { revokedSessions } } }",
        {"t": res["refreshToken"]},
        token=res["accessToken"],
    )
    assert out["data"]["logOut"] == {"revokedSessions": 1}
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


async def test_expired_and_forged_tokens_are_unauthenticated(gql, settings):
    res = await _sign_up(gql)
    claims = jwt.decode(res["accessToken"], options={"verify_signature": False})
    past = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)
    expired = jwt.encode({**claims, "exp": past}, settings.jwt_secret, algorithm="HS256")
    forged = jwt.encode(claims, "not-the-secret", algorithm="HS256")
    none_alg = jwt.encode(claims, None, algorithm="none")
    for token in (expired, forged, none_alg, "garbage"):
        out = await gql(VIEWER, token=token)
        assert out["data"] is None or out["data"]["viewer"] is None
        assert out["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED", (token, out)
    # No token at all: anonymous, not an error.
    assert (await gql(VIEWER))["data"]["viewer"] is None


async def test_mutation_without_token_is_unauthenticated(gql):
    out = await gql('mutation { follow(input: { userId: "x" }) { __typename } }')
    assert out["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
