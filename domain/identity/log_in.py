"""Use case: exchange a username and password for a session."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import utcnow
from domain.errors import ValidationError
from domain.identity.errors import AccountPendingDeletionError, InvalidCredentialsError
from domain.identity.models import users
from domain.identity.passwords import verify_password
from domain.identity.queries import USER_COLUMNS, to_record
from domain.identity.sessions import AuthResult, open_session
from domain.identity.tokens import TokenConfig
from domain.text import normalize_username


async def log_in(
    engine: AsyncEngine, config: TokenConfig, *, username: str, password: str
) -> AuthResult:
    """Verify an active account's password (username case-insensitive) and open a
    session. Raises InvalidCredentialsError (the same answer in the same time for every
    refusal) or, with the right password, AccountPendingDeletionError.
    """
    try:
        canonical = normalize_username(username)
    except ValidationError:
        canonical = None
    row = None
    if canonical is not None and "\x00" not in password:
        async with engine.connect() as conn:
            row = (
                await conn.execute(
                    select(*USER_COLUMNS, users.c.password_hash, users.c.deletion_due_at).where(
                        users.c.username == canonical
                    )
                )
            ).first()
    ok = await verify_password(row.password_hash if row else None, password)
    if ok and row is not None and in_grace_period(row.status, row.deletion_due_at):
        raise AccountPendingDeletionError(row.deletion_due_at)
    if not ok or row is None or row.status != "active":
        raise InvalidCredentialsError()
    async with engine.begin() as conn:
        return await open_session(conn, config, to_record(row))


def in_grace_period(status: str, deletion_due_at: dt.datetime | None) -> bool:
    """Whether an account of ``status`` is being deleted by its owner and may still be
    restored: ``pending_deletion`` and its purge not yet due."""
    return (
        status == "pending_deletion" and deletion_due_at is not None and deletion_due_at > utcnow()
    )
