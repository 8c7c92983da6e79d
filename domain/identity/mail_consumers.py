"""The ``mail`` outbox consumer: verification and password reset mails."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.identity.send_mail import send_reset_mail, send_verification_mail
from domain.mail.config import MailConfig
from domain.mail.ports import MailSender
from domain.outbox.events import EmailVerificationRequested, PasswordResetRequested
from domain.outbox.process import Consumer


def mail_consumer(
    engine: AsyncEngine, sender: MailSender, config: MailConfig, key: bytes
) -> Consumer:
    """The ``mail`` consumer, tokens derived with ``key``; a refusing mail server fails the job."""

    async def verification(e: EmailVerificationRequested, event_id: uuid.UUID) -> None:
        await send_verification_mail(engine, sender, config, key, event_id, e)

    async def reset(e: PasswordResetRequested, event_id: uuid.UUID) -> None:
        await send_reset_mail(engine, sender, config, key, event_id, e)

    return {EmailVerificationRequested: verification, PasswordResetRequested: reset}
