"""Use case: ban, delete or reinstate an account (an operator's action)."""

from __future__ import annotations

import uuid

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import NotFoundError
from domain.identity.end_sessions import announce_ended, revoke_families
from domain.identity.models import USER_STATUSES, users
from domain.identity.session_store import SessionStore


async def set_account_status(
    engine: AsyncEngine, user_id: uuid.UUID, status: str, store: SessionStore | None = None
) -> int:
    """Set the account's ``status`` (``active``, ``banned`` or ``deleted``); banning or
    deleting also ends every session of the account. Return how many sessions ended.

    From the next request on, every authenticated operation of the account is refused,
    on every transport, and its open WebSockets close (the session cache, ``store``;
    README "Sessions"). Raises ValueError for an unknown status, NotFoundError if there
    is no such account.
    """
    if status not in USER_STATUSES:
        raise ValueError(f"unknown account status {status!r}")
    async with engine.begin() as conn:
        found = (
            await conn.execute(
                update(users)
                .where(users.c.id == user_id)
                .values(status=status)
                .returning(users.c.id)
            )
        ).first()
        if found is None:
            raise NotFoundError("No account has that id.")
        ended = await revoke_families(conn, user_id) if status != "active" else []
    await announce_ended(store, user_id, ended, status=status)
    return len(ended)
