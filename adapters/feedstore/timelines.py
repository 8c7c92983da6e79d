"""The timelines on the feed store (:class:`domain.feed.ports.Timelines` on Redis): add,
remove, page, drop and rebuild, each a few scripts or commands in one round trip (per
cluster node). The layout of a timeline is :mod:`domain.feed.timelines`'s."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError

from adapters.feedstore.members import post_id_of
from adapters.feedstore.resp import Call
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
from domain.errors import StoreError
from domain.feed.ports import RebuildBusyError, Rising, Timelines
from domain.feed.timelines.entries import SENTINEL, Entry, sentinel_parts


class RedisTimelines:
    """One family of timelines (``<prefix>:{<owner id>}``) in the feed store.

    ``max_len`` entries are kept (the sentinel aside); keys expire ``ttl`` after their
    last write or read. ``redis`` is a :class:`~adapters.feedstore.FeedRedis` (standalone
    or cluster) or a plain ``Redis`` client. All methods raise
    :class:`~domain.errors.StoreError` (from the RedisError) when Redis fails.
    """

    def __init__(
        self, redis: Redis | FeedRedis, prefix: str, *, max_len: int, ttl: dt.timedelta
    ) -> None:
        self.store = as_feed_redis(redis)
        self.redis = self.store.client  # for single commands (tests, tools)
        self.prefix = prefix
        self.max_len = max_len
        self.ttl_s = int(ttl.total_seconds())

    def key(self, owner: uuid.UUID) -> str:
        """``<prefix>:{<owner>}``: the hash tag keeps an owner's keys in one slot."""
        return f"{self.prefix}:{{{owner}}}"

    @translated
    async def add(self, owners: Sequence[uuid.UUID], entries: Sequence[Entry]) -> int:
        """Add ``entries`` to the timelines of ``owners`` that exist (or are being
        rebuilt); usually one round trip (per cluster node).

        Idempotent (ZADD by post id). Returns how many timelines were written; owners
        without a timeline are skipped (theirs is rebuilt on read). A timeline that is
        not whole takes only the entries not older than its oldest one (see
        :mod:`domain.feed.timelines`): merging an author's older posts below a short
        window never opens a gap in it.

        The first round names only the live keys (half the bytes of naming each with its
        ``:build`` key too); the owners it found missing, usually none or a few, go
        through a second round that adds to the live key or else to the ``:build`` key
        of a rebuild in progress. Each owner's check-and-add is atomic in one script
        call of one of the two rounds, both made after the entries' posts committed, so
        a rebuild running meanwhile never loses an entry.
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
        """Remove posts from one owner's timeline (and from a rebuild in progress, which
        will not bring them back); return how many the timeline held."""
        return await self.remove_from_many([owner], post_ids)

    @translated
    async def remove_from_many(
        self, owners: Sequence[uuid.UUID], post_ids: Sequence[uuid.UUID]
    ) -> int:
        """Remove posts from the timelines of ``owners`` (and rebuilds in progress), in
        one round trip (per cluster node); owners without a timeline are skipped.
        Idempotent. Returns how many entries were removed."""
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
        """Return, per owner, up to ``count`` entries strictly before ``before`` (newest
        first), or None where the timeline does not exist; one round trip for all."""
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
        """Create an empty, whole timeline (stamped with the server's run) for each
        owner that has none: for tests and tools, of owners known to have nothing to
        show. Returns how many were created."""
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
        """Delete the timelines of ``owners`` (and their rebuilds in progress), one
        UNLINK per slot group, one round trip (per cluster node); return keys deleted."""
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
        """Rebuild one owner's timeline from ``load()`` (its newest ``max_len`` entries
        from PostgreSQL); at most one rebuild per owner at a time.

        Raises RebuildBusyError if another rebuild holds the owner's lock (30 s).
        Returns False if the build key vanished midway (e.g. FLUSHALL), True otherwise.
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
            # Release the lock if _finish did not (load() failed, or the build vanished).
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
    """Read one page from each (timelines, owner) in one pipelined round trip (per
    cluster node).

    Per timeline: up to ``count`` entries strictly before ``before`` (newest first), or
    None if the timeline does not exist or was built by another run of its server than
    the one that answered (a restart or a failover since: it may have lost writes, so
    it is rebuilt like a missing one). Reading refreshes the TTL. Entries tied with
    ``before`` on score are fetched and filtered here, so no entry is skipped or
    repeated across pages. All the timelines must be :class:`RedisTimelines` of one
    feed store. Raises StoreError, unless ``strict`` is off: then a timeline whose node
    failed gets the error in its place and the others are read all the same.
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
    """Read one rising page from each (timelines, owner) in one pipelined round trip (per
    cluster node), as :func:`read_pages` reads a falling one (same TTL refresh, missing
    and stale timelines, ties and errors).

    Per timeline: up to ``count`` entries strictly newer than ``after`` (None: from its
    oldest), oldest first, and whether they are exact (:class:`Rising`): the timeline
    is whole, or ``after`` is not older than its oldest entry (a window is complete
    from its oldest entry up).
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
    """One timeline's replies of a :func:`_pipelined` read: whether it is whole, the
    replies of its own calls, and how to read further at ties with the cursor."""

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
        """Up to ``count`` entries of ``rows``, read again with a wider range while a
        full reply held too few past the cursor (many entries tied with it)."""
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
    """Refresh the TTL of, check and read each (timelines, owner) with ``calls_of(key)``,
    all in one pipelined round trip (per cluster node): per timeline, a :class:`_Read`,
    the error of its node (``strict`` off; on, StoreError is raised), or None when it is
    missing or was built by another run of its server (it may have lost writes)."""
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
    """Entries of a raw WITHSCORES reply (member, score, ...)."""
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
    """Entries of a raw WITHSCORES reply (member, score, ...), strictly before ``before``."""
    entries = _entries(rows)
    return [e for e in entries if e < before] if before is not None else entries


def _redis(timelines: Timelines) -> RedisTimelines:
    if not isinstance(timelines, RedisTimelines):
        raise TypeError(f"not timelines of the feed store: {timelines!r}")
    return timelines
