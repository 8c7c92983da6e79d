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
