"""Worker use cases of the ``mail`` consumer; the token row is written under the account's lock
before sending (a retry sends the same token)."""

from __future__ import annotations

import logging
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.identity.email_tokens import RESET_PASSWORD, VERIFY_EMAIL, issue_token
from domain.mail.config import MailConfig
from domain.mail.messages import reset_mail, verification_mail
from domain.mail.ports import MailMessage, MailRejectedError, MailSender
from domain.outbox.events import EmailVerificationRequested, PasswordResetRequested
from domain.visibility.predicates import is_active

log = logging.getLogger("roost.mail")

_USER = text(
    "SELECT id, username, email, email_verified_at FROM users"
    f" WHERE id = :u AND {is_active()} FOR UPDATE"
)
_BY_EMAIL = text(
    f"SELECT id, username, email FROM users WHERE email = :e AND {is_active()} FOR UPDATE"
)
_BY_USERNAME = text(
    f"SELECT id, username, email FROM users WHERE username = :n AND {is_active()}"
    " AND email IS NOT NULL FOR UPDATE"
)


async def _send(sender: MailSender, message: MailMessage, what: str) -> bool:
    try:
        await sender.send(message)
    except MailRejectedError as exc:  # sending again will not help: the job is done
        log.warning("%s mail refused by the mail server: %s", what, exc)
        return False
    return True


async def send_verification_mail(
    engine: AsyncEngine,
    sender: MailSender,
    config: MailConfig,
    key: bytes,
    event_id: uuid.UUID,
    event: EmailVerificationRequested,
) -> bool:
    """Mail ``event``'s verification token unless the account is gone, changed, verified or over
    budget; True if sent. Raises MailUnavailableError."""
    async with engine.begin() as conn:
        user = (await conn.execute(_USER, {"u": event.user_id})).first()
        if user is None or user.email != event.email or user.email_verified_at is not None:
            return False
        token = await issue_token(
            conn,
            key,
            token_id=event_id,
            user_id=user.id,
            purpose=VERIFY_EMAIL,
            email=user.email,
            ttl=config.verification_ttl,
            per_hour=config.per_account_per_hour,
        )
    if token is None:
        return False
    message = verification_mail(
        user.email, user.username, token, link=config.verification_link, ttl=config.verification_ttl
    )
    return await _send(sender, message, "verification")


async def send_reset_mail(
    engine: AsyncEngine,
    sender: MailSender,
    config: MailConfig,
    key: bytes,
    event_id: uuid.UUID,
    event: PasswordResetRequested,
) -> bool:
    """Mail a reset token to the active account of ``event``'s address or username; True if sent.
    Raises MailUnavailableError."""
    async with engine.begin() as conn:
        if event.email is not None:
            user = (await conn.execute(_BY_EMAIL, {"e": event.email})).first()
        else:
            user = (await conn.execute(_BY_USERNAME, {"n": event.username})).first()
        if user is None:
            return False
        token = await issue_token(
            conn,
            key,
            token_id=event_id,
            user_id=user.id,
            purpose=RESET_PASSWORD,
            email=user.email,
            ttl=config.reset_ttl,
            per_hour=config.per_account_per_hour,
        )
    if token is None:
        log.info("password reset of %s not mailed: used, or its hourly budget is spent", user.id)
        return False
    message = reset_mail(
        user.email, user.username, token, link=config.reset_link, ttl=config.reset_ttl
    )
    return await _send(sender, message, "password reset")
