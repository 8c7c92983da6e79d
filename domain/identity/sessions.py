"""Opening a session: one ``sessions`` row plus the token pair handed to the client."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from domain.db import new_id, utcnow
from domain.identity.models import sessions
from domain.identity.queries import UserRecord
from domain.identity.tokens import TokenConfig, issue_access_token, new_refresh_token


@dataclass(frozen=True)
class AuthResult:
    """What sign-up, log-in and refresh return: the user and a fresh token pair."""

    user: UserRecord
    access_token: str
    refresh_token: str
    session_id: uuid.UUID


async def open_session(conn: AsyncConnection, config: TokenConfig, user: UserRecord) -> AuthResult:
    """Insert a session row (in the caller's transaction) and return the token pair."""
    session_id = new_id()
    token, digest = new_refresh_token()
    await conn.execute(
        insert(sessions).values(
            id=session_id,
            user_id=user.id,
            token_hash=digest,
            expires_at=utcnow() + config.refresh_ttl,
        )
    )
    return AuthResult(user, issue_access_token(config, user.id, session_id), token, session_id)
