"""Use case: exchange a username and password for a session."""

from __future__ import annotations

import datetime as dt

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import utcnow
from domain.identity.credentials import check_credentials
from domain.identity.errors import AccountPendingDeletionError, InvalidCredentialsError
from domain.identity.sessions import AuthResult, open_session
from domain.identity.tokens import TokenConfig


async def log_in(
    engine: AsyncEngine, config: TokenConfig, *, username: str, password: str
) -> AuthResult:
    """Verify an active account's password and open a session. Raises InvalidCredentialsError
    (uniform for every refusal) or AccountPendingDeletionError."""
    found = await check_credentials(engine, username, password)
    if found is not None and found.deletion_due_at is not None:
        if in_grace_period(found.user.status, found.deletion_due_at):
            raise AccountPendingDeletionError(found.deletion_due_at)
    if found is None or found.user.status != "active":
        raise InvalidCredentialsError()
    async with engine.begin() as conn:
        return await open_session(conn, config, found.user)


def in_grace_period(status: str, deletion_due_at: dt.datetime | None) -> bool:
    """Whether ``status`` is ``pending_deletion`` and the purge not yet due."""
    return (
        status == "pending_deletion" and deletion_due_at is not None and deletion_due_at > utcnow()
    )
