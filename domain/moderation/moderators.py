"""The moderator role, a ``users`` column set by ``roost admin``
(docs/api/moderation.md "Reports and moderation")."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.moderation.errors import NotModeratorError
from domain.visibility.predicates import is_active

_IS = text(f"SELECT is_moderator FROM users WHERE id = :x AND {is_active()}")
_LOCK = text(f"SELECT is_moderator FROM users WHERE id = :x AND {is_active()} FOR KEY SHARE")
_SET = text(
    "UPDATE users SET is_moderator = :on WHERE username = :name AND is_moderator <> :on"
    " RETURNING id"
)


async def is_moderator(conn: AsyncConnection, user_id: uuid.UUID | None) -> bool:
    """Whether ``user_id`` is an active moderator (False when anonymous)."""
    return user_id is not None and bool(await conn.scalar(_IS, {"x": user_id}))


async def require_moderator(conn: AsyncConnection, user_id: uuid.UUID) -> None:
    """Check the role, reading the account ``FOR KEY SHARE``; raises NotModeratorError."""
    if not await conn.scalar(_LOCK, {"x": user_id}):
        raise NotModeratorError()


async def set_moderator(engine: AsyncEngine, username: str, on: bool) -> bool | None:
    """Grant or revoke the role of ``username``; True if changed, False if not, None if no
    account."""
    async with engine.begin() as conn:
        if await conn.scalar(_SET, {"on": on, "name": username}) is not None:
            return True
        exists = await conn.scalar(
            text("SELECT EXISTS (SELECT 1 FROM users WHERE username = :name)"), {"name": username}
        )
    return False if exists else None
