"""Apollo's automatic persisted queries (APQ v1) on Redis (docs/api/limits.md "HTTP
guards"): a hash alone runs the stored query or answers ``PERSISTED_QUERY_NOT_FOUND``;
a query with its hash is checked (else ``BAD_USER_INPUT``), run and stored for
``APQ_TTL_DAYS`` after its last use when it parses and fits ``APQ_MAX_QUERY_BYTES``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

VERSION = 1
_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")


class PersistedQueryError(Exception):
    """A refused request: ``message``, ``code`` (``extensions.code``), HTTP ``status``."""

    def __init__(self, message: str, code: str, status: int) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status


def not_found() -> PersistedQueryError:
    """Apollo's ``PersistedQueryNotFound`` (the client re-sends the query with its hash)."""
    return PersistedQueryError("PersistedQueryNotFound", "PERSISTED_QUERY_NOT_FOUND", 200)


def not_supported() -> PersistedQueryError:
    """Apollo's ``PersistedQueryNotSupported`` (the client stops sending hashes)."""
    return PersistedQueryError("PersistedQueryNotSupported", "PERSISTED_QUERY_NOT_SUPPORTED", 200)


def query_hash(query: str) -> str:
    """The APQ id of ``query``: lower-case hex SHA-256 of its UTF-8 text."""
    return hashlib.sha256(query.encode()).hexdigest()


@dataclass(frozen=True)
class PersistedQueryRef:
    """The ``persistedQuery`` extension of a request: the query's hash (lower-case)."""

    sha256: str

    @classmethod
    def from_extensions(cls, extensions: dict[str, Any] | None) -> PersistedQueryRef | None:
        """Read ``extensions.persistedQuery``; None when absent. A malformed one (not an
        object, a version other than 1, a hash that is not 64 hex digits) raises
        :class:`PersistedQueryError` (``BAD_REQUEST``, 400)."""
        if not extensions or extensions.get("persistedQuery") is None:
            return None
        pq = extensions["persistedQuery"]
        if not isinstance(pq, dict):
            raise PersistedQueryError(
                "extensions.persistedQuery must be an object.", "BAD_REQUEST", 400
            )
        if pq.get("version") != VERSION:
            raise PersistedQueryError(
                "Unsupported persisted query version (only 1 is).", "BAD_REQUEST", 400
            )
        digest = pq.get("sha256Hash")
        if not isinstance(digest, str) or not _HEX64.match(digest):
            raise PersistedQueryError(
                "extensions.persistedQuery.sha256Hash must be 64 hexadecimal digits.",
                "BAD_REQUEST",
                400,
            )
        return cls(digest.lower())

    def check(self, query: str) -> None:
        """Raise ``BAD_USER_INPUT`` (400) unless ``query`` is the text this hash names."""
        if query_hash(query) != self.sha256:
            raise PersistedQueryError(
                "The persisted query's sha256Hash does not match the query.",
                "BAD_USER_INPUT",
                400,
            )


class PersistedQueryStore:
    """Query texts by hash on Redis (``roost:apq:<sha256>``), with a sliding TTL; Redis
    errors propagate."""

    def __init__(self, redis: Redis, *, ttl_s: int, max_bytes: int) -> None:
        self.redis = redis
        self.ttl_s = ttl_s
        self.max_bytes = max_bytes

    @staticmethod
    def key(sha256: str) -> str:
        return f"roost:apq:{sha256}"

    async def get(self, sha256: str) -> str | None:
        """The stored query text (its TTL restarts), or None."""
        raw = await self.redis.getex(self.key(sha256), ex=self.ttl_s)
        return raw.decode() if isinstance(raw, bytes) else raw

    def storable(self, query: str) -> bool:
        """Whether ``query`` is small enough to store (``APQ_MAX_QUERY_BYTES``)."""
        return len(query.encode()) <= self.max_bytes

    async def put(self, sha256: str, query: str) -> bool:
        """Store ``query`` under its hash for the TTL; False when over the size bound."""
        if not self.storable(query):
            return False
        await self.redis.set(self.key(sha256), query.encode(), ex=self.ttl_s)
        return True
