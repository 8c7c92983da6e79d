"""Use case: change one's e-mail address (confirmed by the password)."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.identity.errors import AccountUnavailableError, EmailTakenError, WrongPasswordError
from domain.identity.passwords import verify_password
from domain.identity.queries import USER_SELECT, UserRecord, to_record
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import EmailVerificationRequested, UserUpdated
from domain.outbox.unit_of_work import unit_of_work
from domain.text import clean_email
from domain.visibility.predicates import is_active

_ACCOUNT = text(f"SELECT password_hash, email FROM users WHERE id = :u AND {is_active()}")
_SET = text(
    "UPDATE users SET email = :e, email_verified_at = NULL"
    f" WHERE id = :u AND {is_active()}"
    f" RETURNING {USER_SELECT}"
)
_CURRENT = text(f"SELECT {USER_SELECT} FROM users WHERE id = :u AND {is_active()}")


async def change_email(
    engine: AsyncEngine,
    user_id: uuid.UUID,
    *,
    email: str,
    password: str,
    dispatcher: Dispatcher | None = None,
) -> UserRecord:
    """Set ``user_id``'s address to ``email`` after checking ``password``; it is unverified and a
    code is mailed. The same address changes nothing. Raises ValidationError (``email``),
    WrongPasswordError, EmailTakenError or AccountUnavailableError."""
    email = clean_email(email)
    async with engine.connect() as conn:
        row = (await conn.execute(_ACCOUNT, {"u": user_id})).first()
    if row is None:
        raise AccountUnavailableError()
    if "\x00" in password or not await verify_password(row.password_hash, password):
        raise WrongPasswordError("password")
    try:
        async with unit_of_work(engine, dispatcher) as uow:
            if row.email == email:
                found = (await uow.conn.execute(_CURRENT, {"u": user_id})).first()
            else:
                found = (await uow.conn.execute(_SET, {"u": user_id, "e": email})).first()
            if found is None:
                raise AccountUnavailableError()
            if row.email != email:
                await uow.record(UserUpdated(user_id, ("email",)))
                await uow.record(EmailVerificationRequested(user_id, email))
    except IntegrityError:
        raise EmailTakenError() from None
    return to_record(found)
