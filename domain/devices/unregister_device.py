"""Use case: unregister a device's push token (docs/api/push.md "Push")."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.devices.register_device import clean_token


async def unregister_device(engine: AsyncEngine, user_id: uuid.UUID, token: str) -> bool:
    """Forget the user's device of ``token``; True if theirs. Raises ValidationError."""
    token = clean_token(token)
    async with engine.begin() as conn:
        result = await conn.execute(
            text("DELETE FROM device_tokens WHERE token = :token AND user_id = :user"),
            {"token": token, "user": user_id},
        )
    return bool(result.rowcount)
