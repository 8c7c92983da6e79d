"""Use case: register a device's push token (docs/api/push.md "Push")."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import new_id
from domain.devices.models import PLATFORMS, TOKEN_MAX
from domain.devices.store import COLUMNS, DeviceRecord, to_device
from domain.errors import ValidationError

#: Devices kept per user; registering one more forgets the least recently registered.
MAX_DEVICES_PER_USER = 20

_REGISTER = text(
    f"""
    WITH evicted AS (
        DELETE FROM device_tokens WHERE id IN (
            SELECT id FROM device_tokens WHERE user_id = :user AND token <> :token
            ORDER BY registered_at DESC, id DESC OFFSET :keep)
    )
    INSERT INTO device_tokens (id, user_id, session_id, platform, token)
    VALUES (:id, :user, :session, :platform, :token)
    ON CONFLICT (token) DO UPDATE SET
        user_id = EXCLUDED.user_id, session_id = EXCLUDED.session_id,
        platform = EXCLUDED.platform, registered_at = now()
    RETURNING {COLUMNS}
    """
)


def clean_token(token: str) -> str:
    """The token if 1-4096 printable ASCII without spaces, else ValidationError (``token``)."""
    if not token:
        raise ValidationError("token", "token must not be empty.")
    if len(token) > TOKEN_MAX:
        raise ValidationError(
            "token", f"token is {len(token)} characters; the limit is {TOKEN_MAX}."
        )
    if not all("!" <= ch <= "~" for ch in token):
        raise ValidationError(
            "token", "token must be printable ASCII without spaces or control characters."
        )
    return token


async def register_device(
    engine: AsyncEngine,
    user_id: uuid.UUID,
    session_id: uuid.UUID,
    *,
    platform: str,
    token: str,
) -> DeviceRecord:
    """Upsert ``token`` for the user's session (it moves to its latest account), keeping
    :data:`MAX_DEVICES_PER_USER`. Raises ValidationError."""
    if platform not in PLATFORMS:
        raise ValidationError("platform", f"platform must be one of {', '.join(PLATFORMS)}.")
    token = clean_token(token)
    async with engine.begin() as conn:
        row = (
            await conn.execute(
                _REGISTER,
                {
                    "id": new_id(),
                    "user": user_id,
                    "session": session_id,
                    "platform": platform,
                    "token": token,
                    "keep": MAX_DEVICES_PER_USER - 1,
                },
            )
        ).one()
    return to_device(row)
