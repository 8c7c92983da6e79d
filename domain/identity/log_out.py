"""Use case: end one session of the viewer, or all of them."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.identity.end_sessions import announce_ended, revoke_families
from domain.identity.models import sessions
from domain.identity.session_store import SessionStore
from domain.identity.tokens import hash_refresh_token


async def log_out(
    engine: AsyncEngine,
    user_id: uuid.UUID,
    refresh_token: str | None,
    store: SessionStore | None = None,
) -> int:
    """End the session of ``refresh_token`` (None: all) with its push devices; return how many
    ended."""
    async with engine.begin() as conn:
        families = None
        if refresh_token is not None:
            families = (
                await conn.scalars(
                    select(sessions.c.family_id).where(
                        sessions.c.user_id == user_id,
                        sessions.c.token_hash == hash_refresh_token(refresh_token),
                    )
                )
            ).all()
        ended = await revoke_families(conn, user_id, families)
    await announce_ended(store, user_id, ended)
    return len(ended)
