"""Serialising the writes that concern one pair of users (follow, block)."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncConnection

from domain.locks import advisory_xact_lock_on, lock_key


def pair_lock_key(a: uuid.UUID, b: uuid.UUID) -> int:
    """Return the advisory-lock key of the unordered pair {a, b} (symmetric)."""
    return lock_key("pair", *sorted((a, b), key=lambda u: u.bytes))


async def lock_pair(conn: AsyncConnection, a: uuid.UUID, b: uuid.UUID) -> None:
    """Take the pair's transaction-scoped advisory lock."""
    await advisory_xact_lock_on(conn, pair_lock_key(a, b))
