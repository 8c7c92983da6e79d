"""Use case: mail the signed-in user a new verification code."""

from __future__ import annotations

import math
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import ValidationError
from domain.identity.email_tokens import VERIFY_EMAIL
from domain.identity.errors import (
    AccountUnavailableError,
    EmailAlreadyVerifiedError,
    TooManyMailsError,
)
from domain.mail.config import MailConfig
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import EmailVerificationRequested
from domain.outbox.unit_of_work import unit_of_work
from domain.visibility.predicates import is_active

_ACCOUNT = text(
    f"SELECT email, email_verified_at FROM users WHERE id = :u AND {is_active()} FOR UPDATE"
)
#: The account's mails of this kind in the last hour, and seconds until the oldest leaves.
_BUDGET = text(
    "SELECT count(*) AS n,"
    " extract(epoch FROM min(created_at) + interval '1 hour' - now()) AS free_in"
    " FROM email_tokens WHERE user_id = :u AND purpose = :p"
    " AND created_at > now() - interval '1 hour'"
)


async def request_email_verification(
    engine: AsyncEngine,
    user_id: uuid.UUID,
    *,
    config: MailConfig,
    dispatcher: Dispatcher | None = None,
) -> str:
    """Ask the worker to mail a new verification code; return the address. Raises
    EmailAlreadyVerifiedError, ValidationError (``email``: none), TooManyMailsError or
    AccountUnavailableError."""
    async with unit_of_work(engine, dispatcher) as uow:
        row = (await uow.conn.execute(_ACCOUNT, {"u": user_id})).first()
        if row is None:
            raise AccountUnavailableError()
        if row.email is None:
            raise ValidationError("email", "Your account has no e-mail address.")
        if row.email_verified_at is not None:
            raise EmailAlreadyVerifiedError()
        budget = (await uow.conn.execute(_BUDGET, {"u": user_id, "p": VERIFY_EMAIL})).one()
        if budget.n >= config.per_account_per_hour:
            raise TooManyMailsError(max(1, math.ceil(float(budget.free_in or 1))))
        await uow.record(EmailVerificationRequested(user_id, row.email))
    email: str = row.email
    return email
