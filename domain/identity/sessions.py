"""Opening a session: one ``sessions`` row plus the token pair handed to the client."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.db import new_id, utcnow
from domain.identity.models import sessions
from domain.identity.queries import UserRecord
from domain.identity.tokens import TokenConfig, issue_access_token, new_refresh_token


@dataclass(frozen=True)
class AuthResult:
    """What sign-up, log-in and refresh return: the user, a token pair and the session."""

    user: UserRecord
    access_token: str
    refresh_token: str
    session_id: uuid.UUID


async def open_session(
    conn: AsyncConnection,
    config: TokenConfig,
    user: UserRecord,
    *,
    family_id: uuid.UUID | None = None,
    refresh: tuple[str, bytes] | None = None,
) -> AuthResult:
    """Insert a refresh-token row in the caller's transaction; return the pair. A rotation passes
    ``family_id`` and ``refresh``; ``sid`` is the family."""
    row_id = new_id()
    family_id = family_id or row_id
    token, digest = refresh or new_refresh_token()
    await conn.execute(
        insert(sessions).values(
            id=row_id,
            user_id=user.id,
            token_hash=digest,
            family_id=family_id,
            expires_at=utcnow() + config.refresh_ttl,
        )
    )
    return AuthResult(user, issue_access_token(config, user.id, family_id), token, family_id)


async def open_sessions(
    engine: AsyncEngine, config: TokenConfig, user_ids: Sequence[uuid.UUID]
) -> list[str]:
    """Open a session per ``user_ids`` in one statement; return their access tokens in order (for
    trusted tooling)."""
    opened = [(new_id(), u) for u in user_ids]  # (session id = its family id, user id)
    expires_at = utcnow() + config.refresh_ttl
    rows = [
        {
            "id": sid,
            "family_id": sid,
            "user_id": u,
            "token_hash": new_refresh_token()[1],
            "expires_at": expires_at,
        }
        for sid, u in opened
    ]
    if rows:
        async with engine.begin() as conn:
            await conn.execute(insert(sessions), rows)
    return [issue_access_token(config, u, sid) for sid, u in opened]
