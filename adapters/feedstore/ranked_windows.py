""":class:`domain.feed.ports.RankedWindows` on the feed store (docs/architecture/home-feed.md
"Ranked order"). A value is records (int64 µs score, 16-byte post id): record 0 the
tail (score 0: none), then the window in rank order.
"""

from __future__ import annotations

import datetime as dt
import secrets
import struct
import uuid

from adapters.feedstore.members import post_id_of
from adapters.feedstore.store import FeedRedis
from adapters.redis_errors import translated
from adapters.resp import Call
from domain.feed.ports import Window
from domain.feed.timelines import Entry

_FORMAT = struct.Struct(">q16s")
#: Bytes per entry.
RECORD = _FORMAT.size
_NO_TAIL = _FORMAT.pack(0, bytes(16))


def encode_window(window: Window) -> bytes:
    """The stored form of a window."""
    tail = window.tail
    head = _NO_TAIL if tail is None else _FORMAT.pack(tail.score, tail.post_id.bytes)
    return head + b"".join(_FORMAT.pack(e.score, e.post_id.bytes) for e in window.entries)


def decode_window(raw: bytes) -> Window:
    """Inverse of :func:`encode_window` (a trailing partial record is ignored)."""
    whole = len(raw) - len(raw) % RECORD
    records = [Entry(s, post_id_of(pk)) for s, pk in _FORMAT.iter_unpack(raw[:whole])]
    if not records:
        return Window([], None)
    tail = records[0] if records[0].score else None
    return Window(records[1:], tail)


class RedisRankedWindows:
    """Calls raise :class:`~domain.errors.StoreError` when the store fails."""

    def __init__(self, store: FeedRedis, ttl: dt.timedelta) -> None:
        self.store = store
        self.ttl_s = max(1, int(ttl.total_seconds()))

    @staticmethod
    def key(viewer_id: uuid.UUID, window_id: str) -> str:
        """``rankwin:{<viewer>}:<window id>``."""
        return f"rankwin:{{{viewer_id}}}:{window_id}"

    @staticmethod
    def new_id() -> str:
        """12 URL-safe characters (72 random bits)."""
        return secrets.token_urlsafe(9)

    @translated
    async def save(self, viewer_id: uuid.UUID, window_id: str, window: Window) -> None:
        """Store ``window`` under ``window_id`` for the TTL."""
        key = self.key(viewer_id, window_id)
        await self.store.execute(
            [Call.of(key, "SET", key, encode_window(window), "EX", self.ttl_s)]
        )

    @translated
    async def load(self, viewer_id: uuid.UUID, window_id: str) -> Window | None:
        """The window, its TTL refreshed; None when it expired or is not the viewer's."""
        key = self.key(viewer_id, window_id)
        (raw,) = await self.store.execute([Call.of(key, "GETEX", key, "EX", self.ttl_s)])
        return None if raw is None else decode_window(raw)
