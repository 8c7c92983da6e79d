"""Use case: may this access token's session act now? (docs/api/sessions.md "Sessions")."""

from __future__ import annotations

import uuid

from sqlalchemy import exists, select
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.identity.models import sessions, users
from domain.identity.session_store import SessionStore, Verdict, verdict_of
from domain.identity.tokens import AccessClaims

#: Why a signed-in account may not act now (banned, deleted, gone): its requests' answer.
ACCOUNT_UNAVAILABLE = "This account is not available."


async def session_state(
    engine: AsyncEngine, user_id: uuid.UUID, session_id: uuid.UUID
) -> tuple[str | None, bool]:
    """The account's status (None: no account) and whether the session has a live token, one
    statement."""
    live = exists().where(
        sessions.c.family_id == session_id,
        sessions.c.user_id == user_id,
        sessions.c.revoked_at.is_(None),
    )
    async with engine.connect() as conn:
        row = (
            await conn.execute(select(users.c.status, live).where(users.c.id == user_id))
        ).first()
    return (row[0], bool(row[1])) if row is not None else (None, False)


async def admit_session(
    engine: AsyncEngine, store: SessionStore | None, claims: AccessClaims
) -> Verdict:
    """The verdict on a valid access token's session: admitted (and whether marked active), ended,
    or unavailable. Cached in Redis, else read from PostgreSQL (``store`` None: PostgreSQL
    alone). Raises :class:`domain.errors.StoreError`."""
    if store is not None:
        verdict = await store.admit(claims.user_id, claims.session_id)
        if verdict is not None:
            return verdict
    status, live = await session_state(engine, claims.user_id, claims.session_id)
    if store is not None:
        return await store.fill(claims.user_id, claims.session_id, status, live)
    return verdict_of(status, live)
