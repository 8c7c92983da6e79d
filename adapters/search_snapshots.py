"""Frozen ranked lists in Redis (:class:`domain.search.snapshots.RankedSnapshots`):
what keeps a ranked connection's pages stable.

A search or suggestion list is ranked once, on its first page, and the whole ranked
list (at most ``SearchConfig.max_results`` entries) is kept for a few minutes under
``ranked:{<owner>}:<kind>:<fingerprint>:<snapshot id>``; the next pages are slices of
it. So a page never repeats or skips a user, even when follower counts, names or the
graph change between two requests (the same idea as Elasticsearch's point in time).
The key carries the owner (the viewer, or the snapshot id for an anonymous search) as
its hash tag, and a fingerprint of what was ranked (the query), so a cursor replayed
against another query finds nothing.

A value is fixed-width records, :data:`RECORD` each: the user id (16 bytes), the score
(int32) and the ranking signal (int64), big-endian: a page is one ``GETRANGE``.
"""

from __future__ import annotations

import datetime as dt
import secrets
import struct
import uuid

from redis.asyncio import Redis

from adapters.redis_errors import translated
from domain.search.ranking import Ranked
from domain.search.snapshots import Slice

_FORMAT = struct.Struct(">16siq")
#: Bytes per entry.
RECORD = _FORMAT.size


def encode_entries(entries: list[Ranked]) -> bytes:
    """The stored form of a ranked list."""
    return b"".join(_FORMAT.pack(e.user_id.bytes, e.score, e.followers) for e in entries)


def decode_entries(raw: bytes) -> list[Ranked]:
    """Inverse of :func:`encode_entries` (a trailing partial record is ignored)."""
    whole = len(raw) - len(raw) % RECORD
    return [
        Ranked(uuid.UUID(bytes=pk), score, followers)
        for pk, score, followers in _FORMAT.iter_unpack(raw[:whole])
    ]


class RedisRankedSnapshots:
    """Saves and slices frozen ranked lists on one Redis (binary replies). Each call is
    one round trip and raises :class:`domain.errors.StoreError` (from the RedisError)
    when Redis fails (the caller ranks again from PostgreSQL)."""

    def __init__(self, redis: Redis, ttl: dt.timedelta) -> None:
        self.redis = redis
        self.ttl_s = max(1, int(ttl.total_seconds()))

    @staticmethod
    def key(owner: str | None, kind: str, fingerprint: str, snapshot_id: str) -> str:
        """``ranked:{<owner or snapshot id>}:<kind>:<fingerprint>:<snapshot id>``."""
        return f"ranked:{{{owner or snapshot_id}}}:{kind}:{fingerprint}:{snapshot_id}"

    @translated
    async def save(
        self, owner: str | None, kind: str, fingerprint: str, entries: list[Ranked]
    ) -> str:
        """Store ``entries`` (in rank order) for ``ttl``; return the new snapshot's id."""
        snapshot_id = secrets.token_urlsafe(9)
        await self.redis.set(
            self.key(owner, kind, fingerprint, snapshot_id),
            encode_entries(entries),
            ex=self.ttl_s,
        )
        return snapshot_id

    @translated
    async def slice(
        self,
        owner: str | None,
        kind: str,
        fingerprint: str,
        snapshot_id: str,
        offset: int,
        n: int,
    ) -> Slice | None:
        """Entries ``[offset, offset + n)`` of a snapshot, or None when it is gone
        (expired, or never made for this owner, kind and fingerprint)."""
        key = self.key(owner, kind, fingerprint, snapshot_id)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.strlen(key)
            pipe.getrange(key, offset * RECORD, (offset + n) * RECORD - 1)
            size, raw = await pipe.execute()
        if not size:
            return None
        return Slice(decode_entries(raw) if n > 0 else [], size // RECORD)
