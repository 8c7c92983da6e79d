""":class:`domain.feed.ports.Timelines` on the feed store (layout:
:mod:`domain.feed.timelines`); each operation is one round trip per node."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError

from adapters.feedstore.members import post_id_of
from adapters.feedstore.store import FeedRedis, as_feed_redis
from adapters.feedstore.timeline_scripts import (
    _ADD_IF_EXISTS,
    _ADD_TO_LIVE,
    _CREATE_EMPTY,
    _FINISH_REBUILD,
    _RELEASE,
    _REMOVE,
    _START_REBUILD,
)
from adapters.redis_errors import store_error, translated
from adapters.resp import Call
from domain.errors import StoreError
from domain.feed.ports import RebuildBusyError, Rising, Timelines
from domain.feed.timelines.entries import SENTINEL, Entry, sentinel_parts


class RedisTimelines:
    """Timelines ``<prefix>:{<owner id>}`` of ``max_len`` entries (sentinel aside),
    expiring ``ttl`` after the last write or read. Methods raise
    :class:`~domain.errors.StoreError` when Redis fails."""

    def __init__(
        self, redis: Redis | FeedRedis, prefix: str, *, max_len: int, ttl: dt.timedelta
    ) -> None:
        self.store = as_feed_redis(redis)
        self.redis = self.store.client  # for single commands (tests, tools)
        self.prefix = prefix
        self.max_len = max_len
        self.ttl_s = int(ttl.total_seconds())

    def key(self, owner: uuid.UUID) -> str:
        """``<prefix>:{<owner>}``: one slot per owner."""
        return f"{self.prefix}:{{{owner}}}"

    @translated
    async def add(self, owners: Sequence[uuid.UUID], entries: Sequence[Entry]) -> int:
        """Add ``entries`` (idempotent) to the owners' timelines that exist or are being
        rebuilt; return how many were written (missing ones are rebuilt on read).

        Round one names live keys only; owners missing there retry against the
        ``:build`` key. Each check-and-add is one atomic script call made after the
        posts committed, so a concurrent rebuild never loses an entry. A partial
        timeline takes only entries not older than its oldest (no gap opens).
        """
        if not owners or not entries:
            return 0
        keys = [self.key(owner) for owner in owners]
        args: list[int | bytes] = [self.max_len, self.ttl_s]
        for e in entries:
            args += [e.score, e.member]
        done = await self.store.eval_by_slot(_ADD_TO_LIVE, keys, 1, args)
        missing = [owners[int(j) - 1] for owners, reply in done for j in reply]
        if not missing:
            return len(keys)
        pairs = [k for i in missing for k in (keys[i], keys[i] + ":build")]
        written = sum(
            int(r) for _, r in await self.store.eval_by_slot(_ADD_IF_EXISTS, pairs, 2, args)
        )
        return len(keys) - len(missing) + written

    async def remove(self, owner: uuid.UUID, post_ids: Sequence[uuid.UUID]) -> int:
        """:meth:`remove_from_many` for one owner."""
        return await self.remove_from_many([owner], post_ids)

    @translated
    async def remove_from_many(
        self, owners: Sequence[uuid.UUID], post_ids: Sequence[uuid.UUID]
    ) -> int:
        """Remove posts (idempotent) from the owners' timelines and rebuilds in
        progress, which will not bring them back; return how many were removed."""
        if not owners or not post_ids:
            return 0
        keys: list[str] = []
        for owner in owners:
            key = self.key(owner)
            keys += [key, key + ":build", key + ":gone"]
        done = await self.store.eval_by_slot(_REMOVE, keys, 3, [p.bytes for p in post_ids])
        return sum(int(r) for _, r in done)

    async def page(
        self, owners: Sequence[uuid.UUID], before: Entry | None, count: int
    ) -> list[list[Entry] | None]:
        """Per owner, :func:`read_pages`' page (strict)."""
        return await read_pages([(self, o) for o in owners], before, count)  # type: ignore[return-value]

    async def read_pages(
        self,
        wanted: Sequence[tuple[Timelines, uuid.UUID]],
        before: Entry | None,
        count: int,
        *,
        strict: bool = True,
    ) -> list[list[Entry] | StoreError | None]:
        """:func:`read_pages` (``wanted`` are RedisTimelines of this one's store)."""
        return await read_pages(wanted, before, count, strict=strict)

    async def read_rising(
        self,
        wanted: Sequence[tuple[Timelines, uuid.UUID]],
        after: Entry | None,
        count: int,
        *,
        strict: bool = True,
    ) -> list[Rising | StoreError | None]:
        """:func:`read_rising` (``wanted`` are RedisTimelines of this one's store)."""
        return await read_rising(wanted, after, count, strict=strict)

    @translated
    async def create_empty(self, owners: Sequence[uuid.UUID]) -> int:
        """Create an empty, whole timeline for each owner without one (tests, tools);
        return how many were created."""
        keys = [self.key(o) for o in owners]
        done = await self.store.eval_by_slot(_CREATE_EMPTY, keys, 1, [self.ttl_s])
        return sum(int(r) for _, r in done)

    @translated
    async def exists(self, owner: uuid.UUID) -> bool:
        """Whether the owner's timeline exists (is complete)."""
        key = self.key(owner)
        (n,) = await self.store.execute([Call.of(key, "EXISTS", key)])
        return bool(n)

    async def drop(self, owner: uuid.UUID) -> None:
        """Delete the owner's timeline, so the next read rebuilds it."""
        await self.drop_many([owner], with_builds=False)

    @translated
    async def drop_many(self, owners: Sequence[uuid.UUID], *, with_builds: bool = True) -> int:
        """Delete the owners' timelines (and rebuilds); return the keys deleted."""
        suffixes = ("", ":build") if with_builds else ("",)
        keys = [self.key(o) + s for o in owners for s in suffixes]
        stride = len(suffixes)
        calls = [
            Call.of(keys[g[0] * stride], "UNLINK", *keys_of(keys, g, stride))
            for _, g in self.store.slot_groups(keys, stride)
        ]
        return sum(int(r) for r in await self.store.execute(calls))

    @translated
    async def rebuild(
        self, owner: uuid.UUID, load: Callable[[], Awaitable[Sequence[Entry]]]
    ) -> bool:
        """Rebuild the owner's timeline from ``load()`` (newest ``max_len`` entries).

        Raises RebuildBusyError while another rebuild holds the owner's lock (30 s).
        Returns False if the build key vanished midway (e.g. FLUSHALL).
        """
        key = self.key(owner)
        build, lock, gone = key + ":build", key + ":lock", key + ":gone"
        token = uuid.uuid4().bytes
        store = self.store
        (taken,) = await store.execute([Call.of(key, "SET", lock, token, "NX", "PX", 30_000)])
        if not taken:
            raise RebuildBusyError(key)
        try:
            await store.execute([_START_REBUILD.call([key, build, gone], [])])
            entries = await load()
            args: list[int | bytes] = [token, self.max_len, self.ttl_s]
            for e in entries:
                args += [e.score, e.member]
            (done,) = await store.execute([_FINISH_REBUILD.call([key, build, lock, gone], args)])
            return bool(done)
        finally:
            await store.execute([_RELEASE.call([lock], [token])])


def keys_of(keys: Sequence[str], group: Sequence[int], stride: int) -> list[str]:
    """The keys of the owners ``group`` (each ``stride`` consecutive keys)."""
    if stride == 1:
        return [keys[i] for i in group]
    return [k for i in group for k in keys[i * stride : (i + 1) * stride]]


@translated
async def read_pages(
    wanted: Sequence[tuple[Timelines, uuid.UUID]],
    before: Entry | None,
    count: int,
    *,
    strict: bool = True,
) -> list[list[Entry] | StoreError | None]:
    """Per (timelines, owner) of one store: up to ``count`` entries strictly before
    ``before``, newest first, or None if missing or built by another server run (it
    may have lost writes). Refreshes the TTL; ties with ``before`` are neither skipped
    nor repeated. Raises StoreError, or with ``strict`` off puts it in place.
    """
    fetch = count + 8  # a few extra for entries tied with the cursor
    out: list[list[Entry] | StoreError | None] = []
    for read in await _pipelined(wanted, lambda key: [_range(key, before, fetch)], strict):
        if read is None or isinstance(read, StoreError):
            out.append(read)
            continue
        (rows,) = read.replies
        out.append(
            await read.widened(
                rows,
                lambda key, n: _range(key, before, n),
                lambda rows: _after(rows, before),
                count,
                fetch,
            )
        )
    return out


@translated
async def read_rising(
    wanted: Sequence[tuple[Timelines, uuid.UUID]],
    after: Entry | None,
    count: int,
    *,
    strict: bool = True,
) -> list[Rising | StoreError | None]:
    """:func:`read_pages` rising: up to ``count`` entries strictly newer than ``after``
    (None: from the oldest), oldest first, exact if the timeline is whole or ``after``
    is not older than its oldest entry.
    """
    fetch = count + 8  # a few extra for entries tied with the cursor
    out: list[Rising | StoreError | None] = []

    def calls(key: str) -> list[Call]:
        return [
            Call.of(key, "ZRANGE", key, 1, 1, "WITHSCORES"),  # the oldest entry
            _rising_range(key, after, fetch),
        ]

    for read in await _pipelined(wanted, calls, strict):
        if read is None or isinstance(read, StoreError):
            out.append(read)
            continue
        oldest, rows = read.replies
        floor = _entries(oldest)
        exact = read.whole or (after is not None and bool(floor) and after >= floor[0])
        entries = await read.widened(
            rows,
            lambda key, n: _rising_range(key, after, n),
            lambda rows: _newer(rows, after),
            count,
            fetch,
        )
        out.append(Rising(entries, exact))
    return out


class _Read:
    """One timeline's replies of a :func:`_pipelined` read."""

    def __init__(self, store: FeedRedis, key: str, whole: bool, replies: list[Any]) -> None:
        self.store, self.key, self.whole, self.replies = store, key, whole, replies

    async def widened(
        self,
        rows: list[bytes],
        range_of: Callable[[str, int], Call],
        entries_of: Callable[[list[bytes]], list[Entry]],
        count: int,
        fetch: int,
    ) -> list[Entry]:
        """Up to ``count`` entries, re-read wider while ties with the cursor fill a
        full reply."""
        entries, n = entries_of(rows), fetch
        while len(entries) < count and len(rows) == 2 * n:
            n *= 4
            (rows,) = await self.store.execute([range_of(self.key, n)])
            entries = entries_of(rows)
        return entries[:count]


async def _pipelined(
    wanted: Sequence[tuple[Timelines, uuid.UUID]],
    calls_of: Callable[[str], list[Call]],
    strict: bool,
) -> list[_Read | StoreError | None]:
    """Refresh, check and read each timeline with ``calls_of(key)``: a :class:`_Read`,
    its node's error (``strict`` off; on, StoreError raised), or None if missing or of
    another server run."""
    if not wanted:
        return []
    family = [_redis(tl) for tl, _ in wanted]
    store = family[0].store
    calls: list[Call] = []
    for family_tl, (_, owner) in zip(family, wanted, strict=True):
        key = family_tl.key(owner)
        calls += [
            Call.of(key, "EXPIRE", key, family_tl.ttl_s),
            Call.of(key, "ZSCORE", key, SENTINEL),
            *calls_of(key),
        ]
    stride = len(calls) // len(wanted)
    runs: list[int | None] = []
    replies = await store.execute(calls, raise_on_error=strict, runs=runs)
    out: list[_Read | StoreError | None] = []
    for i, (family_tl, (_, owner)) in enumerate(zip(family, wanted, strict=True)):
        mine = replies[stride * i : stride * (i + 1)]
        failed = next((r for r in mine if isinstance(r, RedisError)), None)
        if failed is not None:
            out.append(store_error(failed))
            continue
        exists, sentinel, *own = mine
        if not exists or sentinel is None:
            out.append(None)
            continue
        run, whole = sentinel_parts(sentinel)
        if run != runs[stride * i + 1]:
            out.append(None)
            continue
        out.append(_Read(store, family_tl.key(owner), whole, own))
    return out


def _rising_range(key: str, after: Entry | None, num: int) -> Call:
    """ZRANGE BYSCORE from ``after``'s score (inclusive; else scores > 0) up."""
    low = after.score if after else "(0"
    return Call.of(key, "ZRANGE", key, low, "+inf", "BYSCORE", "LIMIT", 0, num, "WITHSCORES")


def _entries(rows: list[bytes]) -> list[Entry]:
    """Entries of a raw WITHSCORES reply."""
    return [
        Entry(int(float(s)), post_id_of(m)) for m, s in zip(rows[0::2], rows[1::2], strict=True)
    ]


def _newer(rows: list[bytes], after: Entry | None) -> list[Entry]:
    """Entries of a raw WITHSCORES reply, strictly newer than ``after``."""
    entries = _entries(rows)
    return [e for e in entries if e > after] if after is not None else entries


def _range(key: str, before: Entry | None, num: int) -> Call:
    """ZRANGE BYSCORE REV from ``before``'s score (inclusive) down to scores > 0."""
    top = before.score if before else "+inf"
    return Call.of(key, "ZRANGE", key, top, "(0", "BYSCORE", "REV", "LIMIT", 0, num, "WITHSCORES")


def _after(rows: list[bytes], before: Entry | None) -> list[Entry]:
    """Entries of a raw WITHSCORES reply, strictly before ``before``."""
    entries = _entries(rows)
    return [e for e in entries if e < before] if before is not None else entries


def _redis(timelines: Timelines) -> RedisTimelines:
    if not isinstance(timelines, RedisTimelines):
        raise TypeError(f"not timelines of the feed store: {timelines!r}")
    return timelines
