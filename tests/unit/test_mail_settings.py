"""SMTP_URL, MAIL_FROM and the sender the worker picks (docs/api/email.md "E-mail"):
smtp:// and smtps:// with a login in the URL; no SMTP_URL is the logging sender in
development, a refusal to start in production; the banner says which."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from adapters.mail import LoggingSender, SmtpConfig, SmtpSender
from adapters.unavailable import SMTP, unavailable_dependency
from app.cli.servers import mail_lines
from app.container import mail_sender
from app.settings import Settings
from domain.mail.ports import MailMessage, MailUnavailableError

SECRET = "a-production-secret-of-this-test-only-" + "x" * 8


def test_smtp_url_forms() -> None:
    plain = SmtpConfig.from_url("smtp://mail.example.org:2525", "a@b.c")
    assert (plain.host, plain.port, plain.tls, plain.username) == (
        "mail.example.org",
        2525,
        False,
        None,
    )
    tls = SmtpConfig.from_url("smtps://me%40example.org:p%3Ass@smtp.example.org", "a@b.c")
    assert (tls.host, tls.port, tls.tls) == ("smtp.example.org", 465, True)
    assert (tls.username, tls.password) == ("me@example.org", "p:ss")
    assert SmtpConfig.from_url("smtp://relay", "a@b.c").port == 25


@pytest.mark.parametrize("url", ["http://mail.example.org", "smtp://", "mail.example.org:25"])
def test_settings_refuse_an_smtp_url_that_is_not_one(url: str) -> None:
    with pytest.raises(ValidationError, match="SMTP_URL"):
        Settings(SMTP_URL=url)


def test_no_smtp_url_logs_in_development_and_refuses_production() -> None:
    assert isinstance(mail_sender(Settings()), LoggingSender)
    assert isinstance(mail_sender(Settings(SMTP_URL="smtp://127.0.0.1:1025")), SmtpSender)
    production = Settings(
        ROOST_ENV="production", JWT_SECRET=SECRET, DATABASE_URL="postgresql://x/y"
    )
    with pytest.raises(RuntimeError, match="needs SMTP_URL"):
        mail_sender(production)
    prod_smtp = production.model_copy(update={"smtp_url": "smtps://u:p@smtp.example.org"})
    assert isinstance(mail_sender(prod_smtp), SmtpSender)


def test_the_banner_says_plainly_whether_mail_is_sent() -> None:
    assert "E-mail is NOT sent (no SMTP_URL)" in "\n".join(mail_lines(Settings()))
    sent = mail_lines(Settings(SMTP_URL="smtp://127.0.0.1:1025"))
    assert sent == ["  E-mail goes out through smtp://127.0.0.1:1025 (the worker)."]


def test_a_mail_server_that_cannot_take_mail_is_an_outage_not_a_bug() -> None:
    try:
        try:
            raise ConnectionRefusedError(111, "refused")
        except OSError as exc:
            raise MailUnavailableError("SMTP server unavailable") from exc
    except MailUnavailableError as exc:
        assert unavailable_dependency(exc) == SMTP


def test_compose_wires_the_worker_to_its_mail_catcher() -> None:
    import re
    from pathlib import Path

    import yaml

    compose = yaml.safe_load((Path(__file__).parents[2] / "docker-compose.yml").read_text())
    services = compose["services"]
    url = services["worker"]["environment"]["SMTP_URL"]
    default = re.fullmatch(r"\$\{SMTP_URL:-(.+)\}", url)
    assert default is not None, url
    smtp = SmtpConfig.from_url(default.group(1), "a@b.c")
    assert smtp.host in services and "mailpit" in services[smtp.host]["image"]
    assert services["worker"]["depends_on"][smtp.host]["condition"] == "service_healthy"


def test_every_limited_action_names_mutations_that_check_the_address() -> None:
    import inspect

    from domain.mail.config import LIMITED_ACTIONS
    from resolvers.mutation import Mutation

    resolvers = {f.graphql_name or "": f for f in Mutation.__strawberry_definition__.fields}
    by_name = {
        "".join(w.capitalize() if i else w for i, w in enumerate(f.python_name.split("_"))): f
        for f in Mutation.__strawberry_definition__.fields
    }
    for action, fields in LIMITED_ACTIONS.items():
        for field in fields:
            found = resolvers.get(field) or by_name.get(field)
            assert found is not None, f"{action}: no mutation {field}"
            source = inspect.getsource(found.base_resolver.wrapped_func)
            assert f'verified_viewer("{field}")' in source, f"{field} does not check the address"


def test_settings_refuse_an_unknown_limited_action() -> None:
    with pytest.raises(ValidationError, match="REQUIRE_VERIFIED_EMAIL_FOR"):
        Settings(REQUIRE_VERIFIED_EMAIL_FOR="post,dance")
    assert Settings(REQUIRE_VERIFIED_EMAIL_FOR=" Post , comment").verified_email_actions == {
        "post",
        "comment",
    }


async def test_the_logging_sender_writes_the_whole_mail_to_the_log(caplog) -> None:
    caplog.set_level("INFO", logger="roost.mail")
    sender = LoggingSender()
    await sender.send(MailMessage("a@example.org", "Reset", "your code:\n    abc"))
    assert "e-mail not sent (no SMTP_URL) to a@example.org: Reset" in caplog.text
    assert "    abc" in caplog.text
    assert [m.to for m in sender.sent] == ["a@example.org"]
