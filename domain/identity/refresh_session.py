"""Use case: rotate a refresh token into a new token pair."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import utcnow
from domain.devices.store import carry_session_devices, end_session_devices
from domain.identity.errors import InvalidTokenError
from domain.identity.models import sessions, users
from domain.identity.queries import USER_COLUMNS, to_record
from domain.identity.sessions import AuthResult, open_session
from domain.identity.tokens import TokenConfig, hash_refresh_token


async def refresh_session(
    engine: AsyncEngine, config: TokenConfig, refresh_token: str
) -> AuthResult:
    """Revoke the presented refresh token and return a new pair (rotation).

    A refresh token works once. Presenting one that was already rotated is treated as
    theft (OAuth 2.0 Security BCP §4.14): every session of that user is revoked. Raises
    InvalidTokenError for an unknown, expired, revoked or reused token, or a user who is
    no longer active.
    """
    digest = hash_refresh_token(refresh_token)
    now = utcnow()
    async with engine.begin() as conn:
        claimed = (
            await conn.execute(
                update(sessions)
                .where(
                    sessions.c.token_hash == digest,
                    sessions.c.revoked_at.is_(None),
                    sessions.c.expires_at > now,
                )
                .values(revoked_at=now)
                .returning(sessions.c.user_id, sessions.c.id)
            )
        ).first()
        if claimed is None:
            reused = await conn.scalar(
                select(sessions.c.user_id).where(
                    sessions.c.token_hash == digest, sessions.c.revoked_at.is_not(None)
                )
            )
            if reused is not None:
                revoked = await conn.execute(
                    update(sessions)
                    .where(sessions.c.user_id == reused, sessions.c.revoked_at.is_(None))
                    .values(revoked_at=now)
                    .returning(sessions.c.id)
                )
                await end_session_devices(conn, revoked.scalars().all())
                # commit the revocation, then refuse
        else:
            row = (
                await conn.execute(select(*USER_COLUMNS).where(users.c.id == claimed.user_id))
            ).one()
            user = to_record(row)
            if user.is_visible:
                auth = await open_session(conn, config, user)
                # The app's push devices follow the session to its new id.
                await carry_session_devices(conn, claimed.id, auth.session_id)
                return auth
    raise InvalidTokenError("The refresh token is invalid, expired or revoked.")
