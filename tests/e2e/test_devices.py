"""Push devices over GraphQL (docs/api/push.md "Push"): registerDevice / unregisterDevice are typed
and idempotent, tokens belong to a user and a session, a refresh carries them to the
new session, and logging out of a session forgets exactly that session's devices."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text

from tests.support.actions import fcm_token, register
from tests.support.documents import LOG_IN, REFRESH, REGISTER
from tests.support.users import TEST_PASSWORD

UNREGISTER = """mutation($t: String!) { unregisterDevice(input: { token: $t }) {
  __typename ... on UnregisterDeviceSuccess { removed }
  ... on Error { code message } ... on ValidationError { field } } }"""
LOG_OUT = """mutation($t: String) { logOut(input: { refreshToken: $t }) {
  ... on LogOutSuccess { endedSessions } } }"""


async def log_in(gql, username: str) -> dict:
    out = (await gql(LOG_IN, {"u": username, "p": TEST_PASSWORD}))["data"]["logIn"]
    assert out["__typename"] == "LogInSuccess", out
    return out


async def devices(engine, token: str) -> list[tuple]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT user_id, session_id, platform FROM device_tokens WHERE token = :t"),
            {"t": token},
        )
        return [tuple(r) for r in rows]


async def test_register_is_idempotent_and_a_token_moves_to_its_latest_account(
    gql, engine, make_users
):
    alice, bob = await make_users(2, prefix="dv")
    token = fcm_token()
    first = await register(gql, alice.token, token, "IOS")
    assert first["__typename"] == "RegisterDeviceSuccess"
    assert first["device"]["platform"] == "IOS"
    again = await register(gql, alice.token, token, "IOS")
    assert again["device"]["registeredAt"] >= first["device"]["registeredAt"]
    assert [r[0] for r in await devices(engine, token)] == [alice.id]

    # The phone changes hands: the token now pushes to bob only.
    await register(gql, bob.token, token, "IOS")
    assert [r[0] for r in await devices(engine, token)] == [bob.id]
    # Alice cannot remove bob's token; bob can, once.
    out = await gql(UNREGISTER, {"t": token}, token=alice.token)
    assert out["data"]["unregisterDevice"] == {
        "__typename": "UnregisterDeviceSuccess",
        "removed": False,
    }
    assert await devices(engine, token)
    for removed in (True, False):
        out = await gql(UNREGISTER, {"t": token}, token=bob.token)
        assert out["data"]["unregisterDevice"]["removed"] is removed
    assert await devices(engine, token) == []


async def test_concurrent_registrations_of_one_token_leave_one_row(gql, engine, make_users):
    users = await make_users(6, prefix="dc")
    token = fcm_token()
    results = await asyncio.gather(*(register(gql, u.token, token) for u in users))
    assert all(r["__typename"] == "RegisterDeviceSuccess" for r in results)
    rows = await devices(engine, token)
    assert len(rows) == 1 and rows[0][0] in {u.id for u in users}


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("", "empty"),
        ("has space", "printable ASCII"),
        ("tab\there", "printable ASCII"),
        ("é" * 10, "printable ASCII"),
        ("x" * 4097, "limit is 4096"),
    ],
)
async def test_bad_tokens_are_typed_errors_that_change_nothing(
    gql, engine, make_users, token, message
):
    (user,) = await make_users(1, prefix="db")
    out = await register(gql, user.token, token)
    assert out["__typename"] == "ValidationError"
    assert out["code"] == "VALIDATION_FAILED" and out["field"] == "token"
    assert message in out["message"]
    bad = (await gql(UNREGISTER, {"t": token}, token=user.token))["data"]["unregisterDevice"]
    assert bad["__typename"] == "ValidationError"
    async with engine.connect() as conn:
        n = await conn.scalar(
            text("SELECT count(*) FROM device_tokens WHERE user_id = :u"), {"u": user.id}
        )
    assert n == 0


async def test_signing_in_is_required(gql):
    out = await gql(REGISTER, {"p": "WEB", "t": fcm_token()})
    assert out["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    out = await gql(REGISTER, {"p": "PAGER", "t": fcm_token()})
    assert out["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED" or out["errors"]


async def test_log_out_forgets_that_sessions_devices_and_refresh_carries_them(
    gql, engine, make_users
):
    (user,) = await make_users(1, prefix="ds")
    phone, laptop = await log_in(gql, user.username), await log_in(gql, user.username)
    phone_token, laptop_token, tablet_token = fcm_token(), fcm_token(), fcm_token()
    await register(gql, phone["accessToken"], phone_token, "IOS")
    await register(gql, laptop["accessToken"], laptop_token, "WEB")
    await register(gql, laptop["accessToken"], tablet_token, "ANDROID")
    (phone_row,) = await devices(engine, phone_token)
    (laptop_row,) = await devices(engine, laptop_token)
    assert phone_row[1] != laptop_row[1]  # one session each

    # The laptop's session rotates its refresh token: the session (``sid``) is the same,
    # and so are its devices'.
    rotated = (await gql(REFRESH, {"t": laptop["refreshToken"]}))["data"]["refreshSession"]
    assert rotated["__typename"] == "RefreshSessionSuccess"
    (moved,) = await devices(engine, laptop_token)
    assert moved[1] == laptop_row[1]

    # Logging the phone out forgets the phone's device only.
    out = await gql(LOG_OUT, {"t": phone["refreshToken"]}, token=phone["accessToken"])
    assert out["data"]["logOut"] == {"endedSessions": 1}
    assert await devices(engine, phone_token) == []
    assert len(await devices(engine, laptop_token)) == len(await devices(engine, tablet_token)) == 1

    # Logging out of the (rotated) laptop session forgets both of its devices.
    out = await gql(LOG_OUT, {"t": rotated["refreshToken"]}, token=rotated["accessToken"])
    assert out["data"]["logOut"] == {"endedSessions": 1}
    assert await devices(engine, laptop_token) == await devices(engine, tablet_token) == []


async def test_log_out_everywhere_and_a_replayed_refresh_token_forget_all_devices(
    gql, engine, make_users
):
    (user,) = await make_users(1, prefix="da")
    one, two = await log_in(gql, user.username), await log_in(gql, user.username)
    t1, t2 = fcm_token(), fcm_token()
    await register(gql, one["accessToken"], t1)
    await register(gql, two["accessToken"], t2)
    out = await gql(LOG_OUT, {"t": None}, token=one["accessToken"])
    assert out["data"]["logOut"] == {"endedSessions": 3}  # make_users' session too
    assert await devices(engine, t1) == await devices(engine, t2) == []

    # Theft detection (a rotated refresh token presented again after the grace window)
    # ends that session, devices included.
    three = await log_in(gql, user.username)
    t3 = fcm_token()
    await register(gql, three["accessToken"], t3)
    rotated = (await gql(REFRESH, {"t": three["refreshToken"]}))["data"]["refreshSession"]
    assert rotated["__typename"] == "RefreshSessionSuccess"
    assert len(await devices(engine, t3)) == 1
    async with engine.begin() as conn:  # the grace window (10 s) is over
        await conn.execute(
            text(
                "UPDATE sessions SET rotated_at = rotated_at - interval '11 seconds'"
                " WHERE user_id = :u"
            ),
            {"u": user.id},
        )
    replay = (await gql(REFRESH, {"t": three["refreshToken"]}))["data"]["refreshSession"]
    assert replay["__typename"] == "InvalidTokenError"
    assert await devices(engine, t3) == []


async def test_a_user_keeps_the_twenty_most_recent_devices(gql, engine, make_users):
    (user,) = await make_users(1, prefix="dm")
    tokens = [fcm_token() for _ in range(22)]
    for token in tokens:
        await register(gql, user.token, token)
    async with engine.connect() as conn:
        kept = set(
            (
                await conn.execute(
                    text("SELECT token FROM device_tokens WHERE user_id = :u"), {"u": user.id}
                )
            ).scalars()
        )
    assert kept == set(tokens[2:])
