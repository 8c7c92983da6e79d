"""Transaction-scoped PostgreSQL advisory locks on (namespace, ids) keys."""

from __future__ import annotations

import hashlib
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection


def lock_key(namespace: str, *ids: uuid.UUID) -> int:
    """Return a signed 64-bit key for (``namespace``, ``ids`` in the given order)."""
    h = hashlib.blake2b(b"roost." + namespace.encode() + b".", digest_size=8)
    for i in ids:
        h.update(i.bytes)
    return int.from_bytes(h.digest(), "big", signed=True)


async def advisory_xact_lock(conn: AsyncConnection, namespace: str, *ids: uuid.UUID) -> None:
    """Block until this transaction holds the advisory lock of (namespace, ids); it is
    released at commit or rollback. Hash collisions only serialise more, never less."""
    await advisory_xact_lock_on(conn, lock_key(namespace, *ids))


async def advisory_xact_lock_on(conn: AsyncConnection, key: int) -> None:
    """Block until this transaction holds the advisory lock ``key`` (a :func:`lock_key`
    or a key built from one, such as ``domain.social.pairs.pair_lock_key``)."""
    await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})
