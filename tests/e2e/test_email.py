"""E-mail over GraphQL with the real worker and a real SMTP server in the process
(docs/api/email.md "E-mail"): the worker mails a verification code at sign-up, through
SMTP, and sends a mail again when the server defers it; tests read the mail the server
received and use its code through GraphQL."""

from __future__ import annotations

import hashlib
import uuid

from sqlalchemy import text

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
    import asyncio

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
    import httpx

    from app.asgi import create_app

    app = create_app(
        settings.model_copy(update={"require_verified_email_for": "post,follow"}), engine=engine
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://roost.test") as client:
        from tests.support.graphql import GQL

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
