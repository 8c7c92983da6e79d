"""Serialising the writes that concern one pair of users (follow, block)."""

from __future__ import annotations

import hashlib
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

#: Namespace mixed into the lock key so Roost's pair locks never collide with other
#: advisory-lock users of the same database.
_NAMESPACE = b"roost.pair."


def pair_lock_key(a: uuid.UUID, b: uuid.UUID) -> int:
    """Return a signed 64-bit advisory-lock key for the unordered pair {a, b}."""
    lo, hi = sorted((a.bytes, b.bytes))
    return int.from_bytes(
        hashlib.blake2b(_NAMESPACE + lo + hi, digest_size=8).digest(), "big", signed=True
    )


async def lock_pair(conn: AsyncConnection, a: uuid.UUID, b: uuid.UUID) -> None:
    """Take a transaction-scoped advisory lock on {a, b}.

    Follow and block of the same two users then run one after the other, so a follow
    can never slip in beside a block that is committing (each re-reads after the lock,
    under READ COMMITTED). Different pairs never wait on each other.
    """
    await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": pair_lock_key(a, b)})
