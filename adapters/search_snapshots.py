""":class:`domain.search.snapshots.RankedSnapshots` on Redis: a ranked list frozen on its
first page, so later pages are stable slices. The key names the owner and the query's
fingerprint; the value is big-endian records (user id, int32 score, int64 signal), so
a page is one ``GETRANGE``.
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
    """Calls raise :class:`domain.errors.StoreError` when Redis fails."""

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
        """Entries ``[offset, offset + n)``, or None when the snapshot is gone."""
        key = self.key(owner, kind, fingerprint, snapshot_id)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.strlen(key)
            pipe.getrange(key, offset * RECORD, (offset + n) * RECORD - 1)
            size, raw = await pipe.execute()
        if not size:
            return None
        return Slice(decode_entries(raw) if n > 0 else [], size // RECORD)
