"""The development sender: without SMTP_URL every message is written to the worker's
log (links and codes included) instead of being sent."""

from __future__ import annotations

import logging

from domain.mail.ports import MailMessage

log = logging.getLogger("roost.mail")


class LoggingSender:
    """Implements domain.mail.ports.MailSender by logging each message at INFO; keeps
    the last ones in ``sent`` (newest last, at most 100)."""

    def __init__(self) -> None:
        self.sent: list[MailMessage] = []

    async def send(self, message: MailMessage) -> None:
        """Log ``message`` (never fails)."""
        log.info(
            "e-mail not sent (no SMTP_URL) to %s: %s\n%s", message.to, message.subject, message.text
        )
        self.sent = [*self.sent[-99:], message]
