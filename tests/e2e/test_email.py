"""E-mail over GraphQL with the real worker and a real SMTP server in the process
(docs/api/email.md "E-mail"): the worker mails a verification code at sign-up, through
SMTP, and sends a mail again when the server defers it; tests read the mail the server
received and use its code through GraphQL."""

from __future__ import annotations

import asyncio
import hashlib
import uuid

import httpx
from sqlalchemy import text

from app.asgi import create_app
from tests.support.graphql import GQL
from tests.support.polling import eventually
from tests.support.smtp import code_in
from tests.support.users import TEST_PASSWORD

SIGN_UP = """mutation($input: SignUpInput!) { signUp(input: $input) { __typename
  ... on SignUpSuccess { accessToken refreshToken user { id username } }
  ... on Error { code message } } }"""


def _name() -> str:
    return f"mail_{uuid.uuid4().hex[:10]}"


async def sign_up(gql, name: str | None = None) -> tuple[str, str, dict]:
    """Sign up a fresh account; return its username, address and SignUpSuccess."""
    name = name or _name()
    address = f"{name}@example.org"
    data = {"username": name, "email": address, "password": TEST_PASSWORD, "displayName": name}
    res = (await gql(SIGN_UP, {"input": data}))["data"]["signUp"]
    assert res["__typename"] == "SignUpSuccess", res
    return name, address, res


async def test_sign_up_mails_a_verification_code_through_smtp(gql, engine, worker, mailbox):
    name, address, _ = await sign_up(gql)
    [mail] = await mailbox.wait_for(address)
    assert mail["From"] == "Roost Tests <roost@tests.example>"
    assert mail["Subject"] == "Confirm your e-mail address"
    assert name in mail.get_body(("plain",)).get_content()
    code = code_in(mail)
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT t.purpose, t.email, t.used_at,"
                    " t.expires_at > now() + interval '47 hours' AS long"
                    " FROM email_tokens t JOIN users u ON u.id = t.user_id"
                    " WHERE u.username = :n AND t.token_hash = :h"
                ),
                {"n": name, "h": hashlib.sha256(code.encode()).digest()},
            )
        ).one()
    # Only the hash is stored; the code works for 48 hours (EMAIL_VERIFICATION_TOKEN_HOURS).
    assert (row.purpose, row.email, row.used_at, row.long) == ("verify_email", address, None, True)
    await worker.drain()
    assert len(mailbox.to(address)) == 1  # one mail per request, however the job ran


async def test_a_mail_the_server_defers_is_sent_again(gql, worker, mailbox):
    mailbox.defer(2)  # 451 twice: the job retries (backoff), then the server takes it
    before = mailbox.deferred
    _, address, _ = await sign_up(gql)
    [mail] = await mailbox.wait_for(address)
    assert mailbox.deferred - before == 2
    await worker.drain()
    assert mailbox.to(address) == [mail]


async def test_a_mail_server_down_past_every_attempt_defers_the_mail_not_drops_it(
    gql, engine, settings, worker, mailbox
):
    attempts = settings.job_attempts
    mailbox.defer(attempts + 1)  # every attempt of the job, and the relay's first re-drive
    before = mailbox.deferred
    _, address, _ = await sign_up(gql)
    [mail] = await mailbox.wait_for(address)
    assert mailbox.deferred - before == attempts + 1
    async with engine.connect() as conn:
        dead = await conn.scalar(text("SELECT count(*) FROM dead_letters WHERE error LIKE '%451%'"))
    assert dead == 0
    await worker.drain()
    assert mailbox.to(address) == [mail]


VERIFY = """mutation($t: String!) { verifyEmail(input: { token: $t }) { __typename
  ... on VerifyEmailSuccess { user { username } } ... on Error { code message } } }"""
REQUEST = """mutation { requestEmailVerification { __typename
  ... on RequestEmailVerificationSuccess { email }
  ... on TooManyMailsError { retryAfterSeconds } ... on Error { code message } } }"""
CHANGE = """mutation($e: String!, $p: String!) { changeEmail(input: { email: $e, password: $p }) {
  __typename ... on ChangeEmailSuccess { user { username } } ... on Error { code message } } }"""
ME = "{ viewer { username email emailVerified } }"
OTHER = "query($u: String!) { user(username: $u) { username email emailVerified } }"


async def signed_up_with_code(gql, mailbox) -> tuple[str, str, str, str]:
    """A fresh account, its address, access token and the code mailed at sign-up."""
    name, address, res = await sign_up(gql)
    [mail] = await mailbox.wait_for(address)
    return name, address, res["accessToken"], code_in(mail)


async def test_the_mailed_code_verifies_the_address_once(gql, worker, mailbox):
    name, address, token, code = await signed_up_with_code(gql, mailbox)
    me = (await gql(ME, token=token))["data"]["viewer"]
    assert me == {"username": name, "email": address, "emailVerified": False}
    # No sign-in needed: the code is the proof.
    ok = (await gql(VERIFY, {"t": code}))["data"]["verifyEmail"]
    assert ok == {"__typename": "VerifyEmailSuccess", "user": {"username": name}}
    assert (await gql(ME, token=token))["data"]["viewer"]["emailVerified"] is True
    again = (await gql(VERIFY, {"t": code}))["data"]["verifyEmail"]
    assert again["code"] == "INVALID_TOKEN" and "used already" in again["message"]
    # Verified: asking for another code is a typed answer, and nothing is mailed.
    res = (await gql(REQUEST, token=token))["data"]["requestEmailVerification"]
    assert res["code"] == "EMAIL_ALREADY_VERIFIED"
    await worker.drain()
    assert len(mailbox.to(address)) == 1


async def test_tampered_expired_and_malformed_codes_are_invalid_tokens(gql, engine, mailbox):
    _, _, token, code = await signed_up_with_code(gql, mailbox)
    flipped = ("A" if code[0] != "A" else "B") + code[1:]
    for bad in (flipped, code[:-1], code + "x", "", "ü" * 43, "x" * 10_000, "' OR 1=1 --"):
        res = (await gql(VERIFY, {"t": bad}))["data"]["verifyEmail"]
        assert res["__typename"] == "InvalidTokenError" and res["code"] == "INVALID_TOKEN", bad
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE email_tokens SET expires_at = now() - interval '1 second'"
                " WHERE token_hash = :h"
            ),
            {"h": hashlib.sha256(code.encode()).digest()},
        )
    res = (await gql(VERIFY, {"t": code}))["data"]["verifyEmail"]
    assert res["code"] == "INVALID_TOKEN" and "expired" in res["message"]
    assert (await gql(ME, token=token))["data"]["viewer"]["emailVerified"] is False


async def test_the_email_fields_are_the_owners_only(gql, mailbox):
    name, _, _, _ = await signed_up_with_code(gql, mailbox)
    _, _, other_token, _ = await signed_up_with_code(gql, mailbox)
    res = await gql(OTHER, {"u": name}, token=other_token)
    assert res["data"]["user"] == {"username": name, "email": None, "emailVerified": None}
    assert {e["extensions"]["code"] for e in res["errors"]} == {"FORBIDDEN"}


async def test_requesting_codes_is_limited_per_account_per_hour(gql, worker, mailbox):
    _, address, token, _ = await signed_up_with_code(gql, mailbox)
    for n in (2, 3):  # MAIL_PER_ACCOUNT_PER_HOUR=3, the sign-up's mail included
        res = (await gql(REQUEST, token=token))["data"]["requestEmailVerification"]
        assert res == {"__typename": "RequestEmailVerificationSuccess", "email": address}
        await mailbox.wait_for(address, n)
    res = (await gql(REQUEST, token=token))["data"]["requestEmailVerification"]
    assert res["code"] == "RATE_LIMITED" and 0 < res["retryAfterSeconds"] <= 3600
    await worker.drain()
    assert len(mailbox.to(address)) == 3
    codes = {code_in(m) for m in mailbox.to(address)}
    assert len(codes) == 3  # each mail its own code; any of them verifies
    ok = (await gql(VERIFY, {"t": sorted(codes)[0]}))["data"]["verifyEmail"]
    assert ok["__typename"] == "VerifyEmailSuccess"


async def test_concurrent_requests_never_mail_past_the_hourly_budget(gql, worker, mailbox):
    _, address, token, _ = await signed_up_with_code(gql, mailbox)
    results = await asyncio.gather(*(gql(REQUEST, token=token) for _ in range(8)))
    kinds = {r["data"]["requestEmailVerification"]["__typename"] for r in results}
    assert kinds <= {"RequestEmailVerificationSuccess", "TooManyMailsError"}
    await worker.drain()
    assert len(mailbox.to(address)) == 3  # the worker holds the limit for racing requests


async def test_changing_the_address_unverifies_it_and_mails_the_new_one(gql, worker, mailbox):
    name, old, token, old_code = await signed_up_with_code(gql, mailbox)
    new = f"new_{name}@example.org"
    wrong = (await gql(CHANGE, {"e": new, "p": "not-the-password"}, token=token))["data"]
    assert wrong["changeEmail"]["code"] == "WRONG_PASSWORD"
    taken = (await gql(CHANGE, {"e": old, "p": TEST_PASSWORD}, token=token))["data"]
    assert taken["changeEmail"]["__typename"] == "ChangeEmailSuccess"  # its own: nothing changes
    _, other, _ = await sign_up(gql)
    taken = (await gql(CHANGE, {"e": other, "p": TEST_PASSWORD}, token=token))["data"]
    assert taken["changeEmail"]["code"] == "EMAIL_TAKEN"
    bad = (await gql(CHANGE, {"e": "no-at-sign", "p": TEST_PASSWORD}, token=token))["data"]
    assert bad["changeEmail"]["code"] == "VALIDATION_FAILED"

    ok = (await gql(CHANGE, {"e": new.upper(), "p": TEST_PASSWORD}, token=token))["data"]
    assert ok["changeEmail"] == {"__typename": "ChangeEmailSuccess", "user": {"username": name}}
    me = (await gql(ME, token=token))["data"]["viewer"]
    assert me == {"username": name, "email": new, "emailVerified": False}
    [mail] = await mailbox.wait_for(new)
    # The old address's code no longer verifies anything.
    res = (await gql(VERIFY, {"t": old_code}))["data"]["verifyEmail"]
    assert res["code"] == "INVALID_TOKEN" and "no longer" in res["message"]
    assert (await gql(VERIFY, {"t": code_in(mail)}))["data"]["verifyEmail"]["__typename"] == (
        "VerifyEmailSuccess"
    )
    assert (await gql(ME, token=token))["data"]["viewer"]["emailVerified"] is True
    await worker.drain()
    assert len(mailbox.to(old)) == 1


CREATE = """mutation($c: String!) { createPost(input: { caption: $c }) {
  __typename ... on Error { code } } }"""


async def test_unverified_accounts_can_be_kept_from_posting(settings, engine, worker, mailbox):

    app = create_app(
        settings.model_copy(update={"require_verified_email_for": "post,follow"}), engine=engine
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://roost.test") as client:
        gql = GQL(client)
        name, _, token, code = await signed_up_with_code(gql, mailbox)
        res = await gql(CREATE, {"c": "hello"}, token=token)
        assert res["data"] is None
        assert [e["extensions"]["code"] for e in res["errors"]] == ["EMAIL_NOT_VERIFIED"]
        # Reading and commenting are not limited here (comment is not in the list).
        assert (await gql(ME, token=token))["data"]["viewer"]["username"] == name
        assert (await gql(VERIFY, {"t": code}))["data"]["verifyEmail"]["__typename"] == (
            "VerifyEmailSuccess"
        )
        res = await gql(CREATE, {"c": "hello"}, token=token)
        assert res["data"]["createPost"]["__typename"] == "CreatePostSuccess"


RESET_REQUEST = """mutation($e: String, $u: String) {
  requestPasswordReset(input: { email: $e, username: $u }) { __typename
    ... on RequestPasswordResetSuccess { message } ... on Error { code message } } }"""
RESET = """mutation($t: String!, $p: String!) {
  resetPassword(input: { token: $t, newPassword: $p }) { __typename
    ... on ResetPasswordSuccess { endedSessions }
    ... on Error { code message } ... on ValidationError { field } } }"""
LOG_IN = """mutation($u: String!, $p: String!) { logIn(input: { username: $u, password: $p }) {
  __typename ... on LogInSuccess { accessToken } ... on Error { code } } }"""
NEW_PASSWORD = "a new pässword 2"


def reset_mails(mailbox, address: str) -> list:
    return [m for m in mailbox.to(address) if m["Subject"] == "Reset your Roost password"]


async def reset_code(mailbox, address: str, count: int = 1) -> str:
    await eventually(lambda: len(reset_mails(mailbox, address)) >= count)
    return code_in(reset_mails(mailbox, address)[count - 1])


async def test_a_reset_code_sets_the_password_once_and_ends_every_session(gql, worker, mailbox):
    name, address, first = await sign_up(gql)
    second = (await gql(LOG_IN, {"u": name, "p": TEST_PASSWORD}))["data"]["logIn"]
    res = (await gql(RESET_REQUEST, {"e": address.upper()}))["data"]["requestPasswordReset"]
    assert res["__typename"] == "RequestPasswordResetSuccess"
    code = await reset_code(mailbox, address)
    # The sign-up rules hold, and a refused password leaves the code unused.
    short = (await gql(RESET, {"t": code, "p": "short"}))["data"]["resetPassword"]
    assert (short["code"], short["field"]) == ("VALIDATION_FAILED", "newPassword")
    ok = (await gql(RESET, {"t": code, "p": NEW_PASSWORD}))["data"]["resetPassword"]
    assert ok == {"__typename": "ResetPasswordSuccess", "endedSessions": 2}
    for token in (first["accessToken"], second["accessToken"]):
        ended = await gql(ME, token=token)
        assert ended["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    old = (await gql(LOG_IN, {"u": name, "p": TEST_PASSWORD}))["data"]["logIn"]
    assert old["code"] == "INVALID_CREDENTIALS"
    new = (await gql(LOG_IN, {"u": name, "p": NEW_PASSWORD}))["data"]["logIn"]
    assert new["__typename"] == "LogInSuccess"
    # The mail reached the address, so it is verified too.
    assert (await gql(ME, token=new["accessToken"]))["data"]["viewer"]["emailVerified"] is True
    again = (await gql(RESET, {"t": code, "p": "yet another one"}))["data"]["resetPassword"]
    assert again["code"] == "INVALID_TOKEN" and "used already" in again["message"]


async def test_a_reset_by_username_and_every_other_code_stops_working(gql, worker, mailbox):
    name, address, _ = await sign_up(gql)
    await gql(RESET_REQUEST, {"u": name.upper()})
    first = await reset_code(mailbox, address)
    await gql(RESET_REQUEST, {"e": address})
    second = await reset_code(mailbox, address, 2)
    assert first != second
    ok = (await gql(RESET, {"t": second, "p": NEW_PASSWORD}))["data"]["resetPassword"]
    assert ok["__typename"] == "ResetPasswordSuccess"
    res = (await gql(RESET, {"t": first, "p": NEW_PASSWORD}))["data"]["resetPassword"]
    assert res["code"] == "INVALID_TOKEN"


async def test_bad_reset_codes_are_invalid_tokens(gql, engine, worker, mailbox):
    name, address, _ = await sign_up(gql)
    [verification] = await mailbox.wait_for(address)
    # A verification code is not a reset code (nor the other way round).
    res = (await gql(RESET, {"t": code_in(verification), "p": NEW_PASSWORD}))["data"]
    assert res["resetPassword"]["code"] == "INVALID_TOKEN"
    await gql(RESET_REQUEST, {"e": address})
    code = await reset_code(mailbox, address)
    assert (await gql(VERIFY, {"t": code}))["data"]["verifyEmail"]["code"] == "INVALID_TOKEN"
    for bad in (code[:-1] + ("A" if code[-1] != "A" else "B"), "", "x" * 10_000, "☃"):
        res = (await gql(RESET, {"t": bad, "p": NEW_PASSWORD}))["data"]["resetPassword"]
        assert res["code"] == "INVALID_TOKEN", bad
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE email_tokens SET expires_at = now() - interval '1 second'"
                " WHERE token_hash = :h"
            ),
            {"h": hashlib.sha256(code.encode()).digest()},
        )
    res = (await gql(RESET, {"t": code, "p": NEW_PASSWORD}))["data"]["resetPassword"]
    assert res["code"] == "INVALID_TOKEN" and "expired" in res["message"]
    old = (await gql(LOG_IN, {"u": name, "p": TEST_PASSWORD}))["data"]["logIn"]
    assert old["__typename"] == "LogInSuccess"  # nothing changed


_RESET_EVENT = text(
    "SELECT o.dispatched_at IS NOT NULL AS dispatched, c.outcome FROM outbox o"
    " LEFT JOIN outbox_consumers c ON c.event_id = o.id AND c.consumer = 'mail'"
    " WHERE o.topic = 'user.password_reset_requested'"
    " AND (o.payload->>'email' = :k OR o.payload->>'username' = :k)"
)


async def test_a_reset_for_nobody_answers_the_same_and_runs_the_same_job(
    gql, engine, worker, mailbox
):
    name, address, _ = await sign_up(gql)
    known = await gql(RESET_REQUEST, {"e": address})
    nobody = f"nobody_{uuid.uuid4().hex[:8]}@example.org"
    unknown = await gql(RESET_REQUEST, {"e": nobody})
    no_name = await gql(RESET_REQUEST, {"u": f"nobody_{uuid.uuid4().hex[:8]}"})
    assert unknown == known == no_name  # the whole response, byte for byte the same data
    await reset_code(mailbox, address)
    await worker.drain()
    # The same code path: an outbox event, consumed by the mail job, which found nobody.
    async with engine.connect() as conn:
        for key in (address, nobody):
            row = (await conn.execute(_RESET_EVENT, {"k": key})).one()
            assert (row.dispatched, row.outcome) == (True, "done"), key
        sent = await conn.scalar(
            text("SELECT count(*) FROM email_tokens WHERE email = :e"), {"e": nobody}
        )
    assert sent == 0 and mailbox.to(nobody) == []
    malformed = (await gql(RESET_REQUEST, {"e": "not an address"}))["data"]
    assert malformed["requestPasswordReset"]["code"] == "VALIDATION_FAILED"
    both = (await gql(RESET_REQUEST, {"e": address, "u": name}))["data"]
    assert both["requestPasswordReset"]["code"] == "VALIDATION_FAILED"
    neither = (await gql(RESET_REQUEST, {}))["data"]
    assert neither["requestPasswordReset"]["code"] == "VALIDATION_FAILED"


async def test_a_reset_storm_mails_one_account_at_most_its_hourly_budget(gql, worker, mailbox):
    name, address, _ = await sign_up(gql)
    answers = await asyncio.gather(
        *(gql(RESET_REQUEST, {"e": address} if i % 2 else {"u": name}) for i in range(12))
    )
    assert all(a == answers[0] for a in answers)
    assert answers[0]["data"]["requestPasswordReset"]["__typename"] == (
        "RequestPasswordResetSuccess"
    )
    await worker.drain()
    assert len(reset_mails(mailbox, address)) == 3  # MAIL_PER_ACCOUNT_PER_HOUR


async def test_reset_requests_spend_the_per_ip_sign_in_budget(settings, engine):
    app = create_app(
        settings.model_copy(update={"rate_limit_enabled": True, "rate_limit_auth": 3}),
        engine=engine,
    )
    ip = f"10.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}.7"
    transport = httpx.ASGITransport(app=app, client=(ip, 40_000))
    async with httpx.AsyncClient(transport=transport, base_url="http://roost.test") as client:
        gql = GQL(client)
        for _ in range(3):
            res = await gql(RESET_REQUEST, {"e": f"{_name()}@example.org"})
            assert res["data"]["requestPasswordReset"]["__typename"] == (
                "RequestPasswordResetSuccess"
            )
        refused = await client.post(
            "/graphql", json={"query": RESET_REQUEST, "variables": {"e": "x@example.org"}}
        )
        assert refused.status_code == 429
        assert refused.json()["errors"][0]["extensions"]["code"] == "RATE_LIMITED"
        # resetPassword and verifyEmail draw on the same budget.
        for doc, variables in ((RESET, {"t": "x", "p": NEW_PASSWORD}), (VERIFY, {"t": "x"})):
            r = await client.post("/graphql", json={"query": doc, "variables": variables})
            assert r.status_code == 429


async def test_a_mailbox_the_server_refuses_is_not_retried(gql, engine, worker, mailbox):
    name, _, res = await sign_up(gql)
    gone = f"no-such-mailbox@{name}.example.org"
    changed = await gql(CHANGE, {"e": gone, "p": TEST_PASSWORD}, token=res["accessToken"])
    assert changed["data"]["changeEmail"]["__typename"] == "ChangeEmailSuccess"
    await worker.drain()
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT c.outcome, (SELECT count(*) FROM dead_letters d"
                    "  WHERE d.event_id = o.id) AS dead FROM outbox o"
                    " JOIN outbox_consumers c ON c.event_id = o.id AND c.consumer = 'mail'"
                    " WHERE o.topic = 'user.email_verification_requested'"
                    " AND o.payload->>'email' = :e"
                ),
                {"e": gone},
            )
        ).one()
    assert (row.outcome, row.dead) == ("done", 0)  # a 550 is final: logged, not retried
    assert mailbox.to(gone) == []
