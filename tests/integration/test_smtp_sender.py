"""The SMTP adapter against a real SMTP server (aiosmtpd): the login of SMTP_URL is
used; a missing or wrong login, a deferral or no server is "try later"
(MailUnavailableError, the job retries); a refused mailbox is final (MailRejectedError)."""

from __future__ import annotations

import pytest
from aiosmtpd.smtp import AuthResult, LoginPassword

from adapters.mail import SmtpConfig, SmtpSender
from domain.mail.ports import MailMessage, MailRejectedError, MailUnavailableError
from tests.support.servers import free_port
from tests.support.smtp import smtp_server

HI = MailMessage(to="someone@example.org", subject="Hi", text="Hello there.")


def _login(server, session, envelope, mechanism, data) -> AuthResult:
    ok = isinstance(data, LoginPassword) and (data.login, data.password) == (
        b"me@example.org",
        b"p:ss w",
    )
    return AuthResult(success=ok)


def sender(url: str) -> SmtpSender:
    return SmtpSender(SmtpConfig.from_url(url, "Roost <roost@example.org>", timeout_s=5))


async def test_the_login_of_the_url_is_used_and_a_bad_one_waits() -> None:
    with smtp_server(authenticator=_login, auth_required=True, auth_require_tls=False) as (
        url,
        box,
    ):
        where = url.removeprefix("smtp://")
        await sender(f"smtp://me%40example.org:p%3Ass%20w@{where}").send(HI)
        [mail] = box.to(HI.to)
        assert (mail["Subject"], mail["From"]) == ("Hi", "Roost <roost@example.org>")
        assert mail.get_body(("plain",)).get_content().strip() == "Hello there."
        for bad in (f"smtp://me%40example.org:wrong@{where}", f"smtp://{where}"):
            with pytest.raises(MailUnavailableError):
                await sender(bad).send(HI)
        assert len(box.to(HI.to)) == 1


async def test_deferred_refused_and_unreachable() -> None:
    with smtp_server() as (url, box):
        box.defer(1)
        with pytest.raises(MailUnavailableError, match="451"):
            await sender(url).send(HI)
        gone = MailMessage(to="no-such-mailbox@example.org", subject="Hi", text="?")
        with pytest.raises(MailRejectedError, match="550"):
            await sender(url).send(gone)
        await sender(url).send(HI)
        assert len(box.to(HI.to)) == 1
    with pytest.raises(MailUnavailableError):
        await sender(f"smtp://127.0.0.1:{free_port()}").send(HI)
