"""Use case: end a session by revoking its refresh token."""

from __future__ import annotations

import uuid

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import utcnow
from domain.devices.store import end_session_devices
from domain.identity.models import sessions
from domain.identity.tokens import hash_refresh_token


async def log_out(engine: AsyncEngine, user_id: uuid.UUID, refresh_token: str | None) -> int:
    """Revoke the viewer's session of ``refresh_token``, or all of them when it is None.

    Idempotent: returns how many sessions were revoked now (0 if already revoked or not
    the viewer's). Access tokens already issued expire on their own (15 min). The push
    devices registered in those sessions are forgotten in the same transaction.
    """
    stmt = update(sessions).where(sessions.c.user_id == user_id, sessions.c.revoked_at.is_(None))
    if refresh_token is not None:
        stmt = stmt.where(sessions.c.token_hash == hash_refresh_token(refresh_token))
    async with engine.begin() as conn:
        ended = (
            (await conn.execute(stmt.values(revoked_at=utcnow()).returning(sessions.c.id)))
            .scalars()
            .all()
        )
        await end_session_devices(conn, ended)
    return len(ended)
