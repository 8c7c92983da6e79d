"""The port every e-mail goes out through (adapters/mail)."""

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
    """The server cannot take the message now (unreachable, 4xx): retry."""


class MailRejectedError(Exception):
    """The server refused the message for good (5xx)."""


class MailSender(Protocol):
    """Hands messages to a mail server."""

    async def send(self, message: MailMessage) -> None:
        """Send; raises MailUnavailableError (retry later) or MailRejectedError (undeliverable)."""
        ...
