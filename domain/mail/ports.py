"""The port every e-mail goes out through (adapters/mail: SMTP, or a logging sender in
development)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class MailMessage:
    """One plain-text message to one address (the sender address is the adapter's)."""

    to: str
    subject: str
    text: str


class MailUnavailableError(Exception):
    """The mail server could not take the message now (unreachable, timed out, a 4xx
    reply): sending it again later may succeed, so the job retries."""


class MailRejectedError(Exception):
    """The mail server refused the message for good (a 5xx reply: no such mailbox, a
    malformed address): sending it again will not help."""


class MailSender(Protocol):
    """Hands messages to a mail server."""

    async def send(self, message: MailMessage) -> None:
        """Send ``message``; raises MailUnavailableError (retry later) or
        MailRejectedError (never deliverable)."""
        ...
