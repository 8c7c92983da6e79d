"""Transaction-scoped PostgreSQL advisory locks on (namespace, ids) keys."""

from __future__ import annotations

import hashlib
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection


def lock_key(namespace: str, *ids: uuid.UUID) -> int:
    """A signed 64-bit key for (``namespace``, ``ids`` in order); collisions only serialise more."""
    h = hashlib.blake2b(b"roost." + namespace.encode() + b".", digest_size=8)
    for i in ids:
        h.update(i.bytes)
    return int.from_bytes(h.digest(), "big", signed=True)


async def advisory_xact_lock(conn: AsyncConnection, namespace: str, *ids: uuid.UUID) -> None:
    """Wait for the transaction-scoped advisory lock of (namespace, ids)."""
    await advisory_xact_lock_on(conn, lock_key(namespace, *ids))


async def advisory_xact_lock_on(conn: AsyncConnection, key: int) -> None:
    """Wait for the transaction-scoped advisory lock ``key`` (:func:`lock_key`)."""
    await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})
