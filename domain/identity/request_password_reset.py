"""Use case: ask for a password reset by address or username, revealing nothing."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import new_id
from domain.errors import ValidationError
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import PasswordResetRequested
from domain.outbox.unit_of_work import unit_of_work
from domain.text import clean_email, clean_text

#: Longer than any username (30): no account's, refused as malformed.
_USERNAME_MAX = 64


async def request_password_reset(
    engine: AsyncEngine,
    *,
    email: str | None = None,
    username: str | None = None,
    dispatcher: Dispatcher | None = None,
) -> None:
    """Append ``user.password_reset_requested`` for exactly one of ``email`` or ``username``, with
    the same work and return whether or not an account matches. Raises ValidationError (the shape
    alone)."""
    if (email is None) == (username is None):
        raise ValidationError("email", "Give an e-mail address or a username (one of them).")
    if email is not None:
        event = PasswordResetRequested(new_id(), email=clean_email(email))
    else:
        assert username is not None
        name = clean_text("username", username.strip(), max_len=_USERNAME_MAX, min_len=1)
        event = PasswordResetRequested(new_id(), username=name.lower())
    async with unit_of_work(engine, dispatcher) as uow:
        await uow.record(event)
