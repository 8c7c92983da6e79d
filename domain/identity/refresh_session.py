"""Use case: rotate a refresh token into a new pair (docs/api/sessions.md "Sessions")."""

from __future__ import annotations

import uuid

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.db import utcnow
from domain.identity.end_sessions import announce_ended, revoke_families
from domain.identity.errors import InvalidTokenError
from domain.identity.models import sessions, users
from domain.identity.queries import USER_COLUMNS, UserRecord, to_record
from domain.identity.session_store import SessionStore
from domain.identity.sessions import AuthResult, open_session
from domain.identity.tokens import (
    TokenConfig,
    hash_refresh_token,
    issue_access_token,
    successor_refresh_token,
)


async def refresh_session(
    engine: AsyncEngine,
    config: TokenConfig,
    refresh_token: str,
    store: SessionStore | None = None,
) -> AuthResult:
    """Exchange a refresh token for its one successor and a new access token; within
    ``config.refresh_grace`` the same successor, later the family is revoked as stolen
    (docs/api/sessions.md "Sessions"). Raises InvalidTokenError (unknown, expired, revoked,
    replayed, account inactive)."""
    digest = hash_refresh_token(refresh_token)
    now = utcnow()
    successor = successor_refresh_token(config, refresh_token)
    replayed = None
    async with engine.begin() as conn:
        claimed = (
            await conn.execute(
                update(sessions)
                .where(
                    sessions.c.token_hash == digest,
                    sessions.c.revoked_at.is_(None),
                    sessions.c.rotated_at.is_(None),
                    sessions.c.expires_at > now,
                )
                .values(rotated_at=now)
                .returning(sessions.c.user_id, sessions.c.family_id)
            )
        ).first()
        if claimed is not None:
            user = await _active_user(conn, claimed.user_id)
            if user is not None:
                return await open_session(
                    conn, config, user, family_id=claimed.family_id, refresh=successor
                )
        else:
            row = (
                await conn.execute(
                    select(
                        sessions.c.user_id,
                        sessions.c.family_id,
                        sessions.c.rotated_at,
                        sessions.c.revoked_at,
                    ).where(sessions.c.token_hash == digest)
                )
            ).first()
            if row is not None and row.revoked_at is None and row.rotated_at is not None:
                if now - row.rotated_at <= config.refresh_grace:
                    live = await conn.scalar(
                        select(sessions.c.id).where(
                            sessions.c.token_hash == successor[1],
                            sessions.c.revoked_at.is_(None),
                        )
                    )
                    user = await _active_user(conn, row.user_id)
                    if live is not None and user is not None:
                        access = issue_access_token(config, user.id, row.family_id)
                        return AuthResult(user, access, successor[0], row.family_id)
                else:
                    replayed = row
                    await revoke_families(conn, row.user_id, [row.family_id])
                    # committed with the block; then refused
    if replayed is not None:
        await announce_ended(store, replayed.user_id, [replayed.family_id])
    raise InvalidTokenError("The refresh token is invalid, expired or revoked.")


async def _active_user(conn: AsyncConnection, user_id: uuid.UUID) -> UserRecord | None:
    row = (await conn.execute(select(*USER_COLUMNS).where(users.c.id == user_id))).one()
    user = to_record(row)
    return user if user.is_visible else None
