"""The SMTP sender: one aiosmtplib connection per message (too few for a pool)."""

from __future__ import annotations

from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from urllib.parse import unquote, urlsplit

import aiosmtplib

from domain.mail.ports import MailMessage, MailRejectedError, MailUnavailableError


@dataclass(frozen=True)
class SmtpConfig:
    """``smtp://[user:pass@]host[:port]`` (25, STARTTLS if offered) or ``smtps://`` (465,
    TLS), and the ``From`` address."""

    host: str
    port: int
    tls: bool
    username: str | None
    password: str | None
    sender: str
    timeout_s: float = 10.0

    @classmethod
    def from_url(cls, url: str, sender: str, *, timeout_s: float = 10.0) -> SmtpConfig:
        """Parse SMTP_URL; raises ValueError for another scheme or a missing host."""
        parts = urlsplit(url)
        if parts.scheme not in ("smtp", "smtps"):
            raise ValueError("SMTP_URL must start with smtp:// or smtps://")
        if not parts.hostname:
            raise ValueError("SMTP_URL names no host (smtp://host:port)")
        tls = parts.scheme == "smtps"
        return cls(
            host=parts.hostname,
            port=parts.port or (465 if tls else 25),
            tls=tls,
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
            sender=sender,
            timeout_s=timeout_s,
        )


def _email(message: MailMessage, sender: str) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = message.to
    msg["Subject"] = message.subject
    msg["Date"] = formatdate(localtime=False, usegmt=True)
    domain = sender.rpartition("@")[2].strip("> ") or None
    msg["Message-ID"] = make_msgid(domain=domain)
    msg.set_content(message.text)
    return msg


#: 5xx replies about the login (required, too weak, refused, needs TLS): SMTP_URL is
#: wrong, not the message, so the mail waits for the fix instead of being dropped.
_LOGIN_CODES = frozenset({530, 534, 535, 538})


class SmtpSender:
    """Implements domain.mail.ports.MailSender over SMTP."""

    def __init__(self, config: SmtpConfig) -> None:
        self.config = config

    async def send(self, message: MailMessage) -> None:
        """Send ``message``. Raises MailRejectedError on 5xx, MailUnavailableError (retried)
        on no connection, timeout, 4xx or a login failure."""
        cfg = self.config
        try:
            await aiosmtplib.send(
                _email(message, cfg.sender),
                hostname=cfg.host,
                port=cfg.port,
                username=cfg.username,
                password=cfg.password,
                use_tls=cfg.tls,
                start_tls=False if cfg.tls else None,
                timeout=cfg.timeout_s,
            )
        except aiosmtplib.SMTPRecipientsRefused as exc:
            codes = [r.code for r in exc.recipients]
            if all(code >= 500 for code in codes):
                raise MailRejectedError(f"recipient refused: {exc}") from exc
            raise MailUnavailableError(f"recipient deferred: {exc}") from exc
        except aiosmtplib.SMTPAuthenticationError as exc:
            raise MailUnavailableError(f"SMTP login refused: {exc}") from exc
        except aiosmtplib.SMTPResponseException as exc:
            if exc.code >= 500 and exc.code not in _LOGIN_CODES:
                raise MailRejectedError(f"refused: {exc.code} {exc.message}") from exc
            raise MailUnavailableError(f"deferred: {exc.code} {exc.message}") from exc
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
            raise MailUnavailableError(f"SMTP server unavailable: {exc!r}") from exc
