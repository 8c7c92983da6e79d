"""``Idempotency-Key`` for GraphQL mutations over HTTP POST, on Redis
(draft-ietf-httpapi-idempotency-key-header; docs/api/limits.md "HTTP guards").

A key is scoped to the signed-in user; its record is *pending* (expiring after
``IDEMPOTENCY_LOCK_S``), then *done* with the response. Claiming is one atomic script
call, so two duplicates never both own a key.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import secrets
import time
import uuid
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

#: Visible ASCII without quotes and backslash, 16-255 characters (a UUID is 36).
_KEY = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]{16,255}$")

#: Returns the current record, or sets ARGV[1] for ARGV[2] ms and returns nil.
_CLAIM = """
local v = redis.call('GET', KEYS[1])
if v then return v end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
"""
#: Stores ARGV[2] for ARGV[3] ms if the key holds our pending ARGV[1] or has expired.
_COMPLETE = """
local v = redis.call('GET', KEYS[1])
if v == false or v == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
"""
#: Deletes the key if it still holds our pending record ARGV[1].
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

POLL_S = 0.025


class IdempotencyError(Exception):
    """A refused request: ``message``, ``code`` (``extensions.code``), HTTP ``status``."""

    def __init__(self, message: str, code: str, status: int) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status


def parse_key(values: list[str]) -> str | None:
    """The key of the ``Idempotency-Key`` header values; None when absent. Several
    headers, or not 16-255 visible ASCII (optionally an RFC 8941 sf-string), raise 400."""
    if not values:
        return None
    if len(values) > 1:
        raise IdempotencyError("Send one Idempotency-Key header.", "BAD_REQUEST", 400)
    raw = values[0].strip()
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        raw = raw[1:-1]
    if not _KEY.match(raw):
        raise IdempotencyError(
            "Idempotency-Key must be 16 to 255 visible ASCII characters (a UUID, say).",
            "BAD_REQUEST",
            400,
        )
    return raw


def fingerprint(query: str, operation_name: str | None, variables: dict[str, Any] | None) -> str:
    """SHA-256 of the request as executed: query text (after persisted-query lookup),
    operation name and variables (canonical JSON, keys sorted)."""
    doc = json.dumps(
        {"q": query, "o": operation_name, "v": variables or {}},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(doc.encode()).hexdigest()


def redis_key(viewer: uuid.UUID | None, key: str) -> str:
    """The record's Redis key: per user, hash-tagged by user; anonymous: per key."""
    digest = hashlib.sha256(key.encode()).hexdigest()
    if viewer is None:
        return f"roost:idem:{{anon:{digest}}}"
    return f"roost:idem:{{u:{viewer}}}:{digest}"


@dataclass(frozen=True)
class StoredResponse:
    """A response kept for replay: HTTP status and the JSON body as sent."""

    status: int
    body: str


@dataclass
class Claim:
    """Ownership of a key for one execution, until completed or released."""

    key: str
    pending: bytes


class IdempotencyStore:
    """Pending/done records on Redis. Redis errors propagate (the guards fail open)."""

    def __init__(self, redis: Redis, *, ttl_s: int, lock_s: int, wait_ms: int) -> None:
        self.ttl_ms = ttl_s * 1000
        self.lock_ms = lock_s * 1000
        self.wait_s = wait_ms / 1000
        self.redis = redis
        self._claim = redis.register_script(_CLAIM)
        self._complete = redis.register_script(_COMPLETE)
        self._release = redis.register_script(_RELEASE)

    async def begin(self, key: str, fp: str) -> Claim | StoredResponse:
        """Claim ``key`` for fingerprint ``fp``: a :class:`Claim`, or the response to
        replay. :class:`IdempotencyError` ``IDEMPOTENCY_KEY_REUSED`` or ``..._IN_FLIGHT``."""
        pending = json.dumps(
            {"state": "pending", "fp": fp, "token": secrets.token_hex(8)}, separators=(",", ":")
        ).encode()
        deadline = time.monotonic() + self.wait_s
        while True:
            current = await self._claim(keys=[key], args=[pending, self.lock_ms])
            if current is None:
                return Claim(key, pending)
            record = json.loads(current)
            if record.get("fp") != fp:
                raise IdempotencyError(
                    "This Idempotency-Key was used with a different request; "
                    "use a new key for a new request.",
                    "IDEMPOTENCY_KEY_REUSED",
                    422,
                )
            if record.get("state") == "done":
                return StoredResponse(int(record["status"]), record["body"])
            if time.monotonic() >= deadline:
                raise IdempotencyError(
                    "A request with this Idempotency-Key is still being processed; retry later.",
                    "IDEMPOTENCY_KEY_IN_FLIGHT",
                    409,
                )
            await asyncio.sleep(POLL_S)

    async def complete(self, claim: Claim, response: StoredResponse) -> None:
        """Store ``response`` under the claimed key for ``IDEMPOTENCY_TTL_HOURS``."""
        record = json.loads(claim.pending)
        done = json.dumps(
            {"state": "done", "fp": record["fp"], "status": response.status, "body": response.body},
            separators=(",", ":"),
            ensure_ascii=False,
        ).encode()
        await self._complete(keys=[claim.key], args=[claim.pending, done, self.ttl_ms])

    async def release(self, claim: Claim) -> None:
        """Free the claimed key without storing anything (the request never executed)."""
        await self._release(keys=[claim.key], args=[claim.pending])
