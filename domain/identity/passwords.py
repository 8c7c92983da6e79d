"""Password hashing with argon2id (argon2-cffi's defaults, RFC 9106 low-memory profile)."""

from __future__ import annotations

import asyncio

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

_hasher = PasswordHasher()

#: Verified for unknown usernames, so a wrong name costs as long as a wrong password.
_DUMMY_HASH = _hasher.hash("roost-timing-equaliser")


def hash_password_sync(password: str) -> str:
    """Return the argon2id PHC string for ``password`` (blocking, ~50 ms)."""
    return _hasher.hash(password)


async def hash_password(password: str) -> str:
    """Return the argon2id PHC string for ``password``, hashed off the event loop."""
    return await asyncio.to_thread(_hasher.hash, password)


async def verify_password(password_hash: str | None, password: str) -> bool:
    """Whether ``password`` matches ``password_hash``; with no hash, the same time and False."""

    def _verify() -> bool:
        try:
            _hasher.verify(password_hash or _DUMMY_HASH, password)  # raises on a mismatch
            return bool(password_hash)
        except (VerificationError, InvalidHashError):
            return False

    return await asyncio.to_thread(_verify)
