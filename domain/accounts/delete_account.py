"""Use case: the owner deletes their account: hidden at once, purged after a grace period."""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.identity.errors import AccountUnavailableError, WrongPasswordError
from domain.identity.passwords import verify_password
from domain.identity.session_store import SessionStore
from domain.moderation.set_user_status import change_status
from domain.outbox.events import AccountDeletionRequested
from domain.outbox.unit_of_work import unit_of_work
from domain.visibility.predicates import is_active

_HASH = text(f"SELECT password_hash FROM users WHERE id = :x AND {is_active()}")
_DUE = text(
    "UPDATE users SET deletion_due_at = now() + make_interval(secs => :grace)"
    " WHERE id = :x RETURNING deletion_due_at"
)


async def delete_account(
    engine: AsyncEngine,
    user_id: uuid.UUID,
    *,
    password: str,
    grace: dt.timedelta,
    counter_shards: int,
    sessions: SessionStore | None = None,
) -> dt.datetime:
    """Mark the account ``pending_deletion`` once ``password`` checks (one status change); return
    when the purge is due. Raises WrongPasswordError or AccountUnavailableError."""
    async with engine.connect() as conn:
        stored = await conn.scalar(_HASH, {"x": user_id})
    if stored is None:
        raise AccountUnavailableError()
    if "\x00" in password or not await verify_password(stored, password):
        raise WrongPasswordError("password")
    async with unit_of_work(engine) as uow:
        conn = uow.conn
        change = await change_status(
            uow, user_id, "pending_deletion", counter_shards=counter_shards
        )
        if change.previous != "active":  # banned (or deleting) since the check: refuse
            raise AccountUnavailableError()
        due: dt.datetime = await conn.scalar(_DUE, {"x": user_id, "grace": grace.total_seconds()})
        await uow.record(AccountDeletionRequested(user_id, due))
    await change.announce(sessions)
    return due
