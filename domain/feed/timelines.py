"""Redis timelines: the per-user home feeds and the per-author recent-posts stores.

A timeline is a sorted set under a ``{id}``-hash-tagged key (so every key of one user
lives in one Redis Cluster slot):

* member: the post's UUIDv7 as 16 raw bytes; score: its ``created_at`` in microseconds
  since the epoch (an integer below 2^53, so the double is exact). Equal scores order
  by member bytes, which is PostgreSQL's ``uuid`` order: (score, member) is the same
  total order as ``(created_at, id)`` in SQL, and cursors mean the same on both.
* a sentinel member ``b""`` at score 0 marks the key as *complete* for its window: a
  key that exists holds every post it should (design.md "Home feed"), and an empty
  feed still exists. Reads use scores > 0 only.

Writers add to timelines that exist (or are being rebuilt) and never create one; a
missing timeline is rebuilt from PostgreSQL by :meth:`Timelines.rebuild`, which
first creates a ``:build`` key that concurrent writers also add to, then swaps it in
atomically, so a post committed during a rebuild is never lost. Removals (deletes,
unfollows) that meet a rebuild record their members in a ``:gone`` set, which the swap
leaves out of what the rebuild loaded, so a removed post never comes back either.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from redis.asyncio import Redis

SENTINEL = b""
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def score_of(ts: dt.datetime) -> int:
    """Return ``ts`` as whole microseconds since the Unix epoch (the timeline score)."""
    return (ts - _EPOCH) // dt.timedelta(microseconds=1)


def time_of(score: int | float) -> dt.datetime:
    """Inverse of :func:`score_of`."""
    return _EPOCH + dt.timedelta(microseconds=int(score))


@dataclass(frozen=True, order=True, slots=True)
class Entry:
    """A timeline entry; entries order by (score, post_id) like ``(created_at, id)``."""

    score: int
    post_id: uuid.UUID

    @property
    def member(self) -> bytes:
        """The sorted-set member: the UUID's 16 bytes."""
        return self.post_id.bytes

    @classmethod
    def of(cls, created_at: dt.datetime, post_id: uuid.UUID) -> Entry:
        """Build the entry of a post from its ``created_at`` and id."""
        return cls(score_of(created_at), post_id)


# KEYS: live timelines; ARGV: maxlen, ttl, then score/member pairs.
# The fast path of Timelines.add: adds the entries to each timeline that exists, trims
# it to maxlen real entries (rank 0 is the sentinel; a no-op while it holds fewer) and
# refreshes its TTL (EXPIRE doubles as the existence test: three calls per timeline).
# Returns the 1-based indexes of the KEYS that do not exist.
_ADD_TO_LIVE = """
local ttl = tonumber(ARGV[2])
local trim = -(tonumber(ARGV[1]) + 1)
local missing = {}
for i = 1, #KEYS do
  local key = KEYS[i]
  if redis.call('EXPIRE', key, ttl) == 1 then
    redis.call('ZADD', key, unpack(ARGV, 3))
    redis.call('ZREMRANGEBYRANK', key, 1, trim)
  else
    missing[#missing + 1] = i
  end
end
return missing
"""

# KEYS: pairs (timeline, its :build key); ARGV: maxlen, ttl, then score/member pairs.
# Adds the entries to whichever of the pair exists (the live key first), trims to
# maxlen real entries (rank 0 is the sentinel) and refreshes the TTL of a live key.
# Returns how many timelines were written.
_ADD_IF_EXISTS = """
local ttl = tonumber(ARGV[2])
local trim = -(tonumber(ARGV[1]) + 1)
local written = 0
for i = 1, #KEYS, 2 do
  local key = KEYS[i]
  local live = redis.call('EXPIRE', key, ttl) == 1
  if live or redis.call('EXISTS', KEYS[i + 1]) == 1 then
    if not live then key = KEYS[i + 1] end
    redis.call('ZADD', key, unpack(ARGV, 3))
    redis.call('ZREMRANGEBYRANK', key, 1, trim)
    written = written + 1
  end
end
return written
"""

# KEYS: timeline, :build key, lock key, :gone key; ARGV: lock token, maxlen, ttl,
# score/member pairs. Finishes a rebuild: adds the entries read from PostgreSQL to the
# :build key (which may already hold entries that writers added meanwhile), except those
# removed while the rebuild ran (the :gone set: the load may have read them before their
# removal), trims, swaps it in, releases the lock.
_FINISH_REBUILD = """
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
local maxlen = tonumber(ARGV[2])
local gone = redis.call('EXISTS', KEYS[4]) == 1
local batch = {}
for i = 4, #ARGV, 2 do
  if not gone or redis.call('SISMEMBER', KEYS[4], ARGV[i + 1]) == 0 then
    batch[#batch + 1] = ARGV[i]
    batch[#batch + 1] = ARGV[i + 1]
  end
  if #batch >= 1000 then
    redis.call('ZADD', KEYS[2], unpack(batch))
    batch = {}
  end
end
if #batch > 0 then redis.call('ZADD', KEYS[2], unpack(batch)) end
redis.call('DEL', KEYS[4])
if redis.call('ZCARD', KEYS[2]) > maxlen + 1 then
  redis.call('ZREMRANGEBYRANK', KEYS[2], 1, -(maxlen + 1))
end
redis.call('RENAME', KEYS[2], KEYS[1])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
if redis.call('GET', KEYS[3]) == ARGV[1] then redis.call('DEL', KEYS[3]) end
return 1
"""

# KEYS: triples (timeline, its :build key, its :gone key); ARGV: members.
# Removes the members from each timeline and from a rebuild in progress; there it also
# records them in :gone, so the rebuild's load (possibly read before the removal) does
# not bring them back. Returns how many entries were removed from the timelines.
_REMOVE = """
local removed = 0
for i = 1, #KEYS, 3 do
  removed = removed + redis.call('ZREM', KEYS[i], unpack(ARGV))
  if redis.call('EXISTS', KEYS[i + 1]) == 1 then
    redis.call('ZREM', KEYS[i + 1], unpack(ARGV))
    redis.call('SADD', KEYS[i + 2], unpack(ARGV))
    redis.call('PEXPIRE', KEYS[i + 2], 120000)
  end
end
return removed
"""


class RebuildBusyError(Exception):
    """Another process is rebuilding this timeline right now."""


class Timelines:
    """One family of timelines (``<prefix>:{<owner id>}``) on one Redis.

    ``max_len`` entries are kept (the sentinel aside); keys expire ``ttl`` after their
    last write or read. All methods raise ``redis.exceptions.RedisError`` when Redis
    fails; callers decide the fallback.
    """

    def __init__(self, redis: Redis, prefix: str, *, max_len: int, ttl: dt.timedelta) -> None:
        self.redis = redis
        self.prefix = prefix
        self.max_len = max_len
        self.ttl_s = int(ttl.total_seconds())
        self._add_live = redis.register_script(_ADD_TO_LIVE)
        self._add = redis.register_script(_ADD_IF_EXISTS)
        self._finish = redis.register_script(_FINISH_REBUILD)
        self._remove = redis.register_script(_REMOVE)

    def key(self, owner: uuid.UUID) -> str:
        """``<prefix>:{<owner>}``: the hash tag keeps an owner's keys in one slot."""
        return f"{self.prefix}:{{{owner}}}"

    async def add(self, owners: Sequence[uuid.UUID], entries: Sequence[Entry]) -> int:
        """Add ``entries`` to the timelines of ``owners`` that exist (or are being
        rebuilt); usually one round trip.

        Idempotent (ZADD by post id). Returns how many timelines were written; owners
        without a timeline are skipped (theirs is rebuilt on read).

        The first call names only the live keys (half the bytes of naming each with its
        ``:build`` key too); the owners it found missing, usually none or a few, go
        through a second call that adds to the live key or else to the ``:build`` key of
        a rebuild in progress. Each owner's check-and-add is atomic in one of the two
        calls, both made after the entries' posts committed, so a rebuild running
        meanwhile never loses an entry.
        """
        if not owners or not entries:
            return 0
        keys = [self.key(owner) for owner in owners]
        args: list[int | bytes] = [self.max_len, self.ttl_s]
        for e in entries:
            args += [e.score, e.member]
        missing = await self._add_live(keys=keys, args=args)
        if not missing:
            return len(keys)
        pairs: list[str] = []
        for i in missing:
            key = keys[int(i) - 1]
            pairs += [key, key + ":build"]
        return len(keys) - len(missing) + int(await self._add(keys=pairs, args=args))

    async def remove(self, owner: uuid.UUID, post_ids: Sequence[uuid.UUID]) -> int:
        """Remove posts from one owner's timeline (and from a rebuild in progress, which
        will not bring them back); return how many the timeline held."""
        return await self.remove_from_many([owner], post_ids)

    async def remove_from_many(
        self, owners: Sequence[uuid.UUID], post_ids: Sequence[uuid.UUID]
    ) -> int:
        """Remove posts from the timelines of ``owners`` (and rebuilds in progress), in
        one round trip; owners without a timeline are skipped. Idempotent. Returns how
        many entries were removed."""
        if not owners or not post_ids:
            return 0
        keys: list[str] = []
        for owner in owners:
            key = self.key(owner)
            keys += [key, key + ":build", key + ":gone"]
        return int(await self._remove(keys=keys, args=[p.bytes for p in post_ids]))

    async def page(
        self, owners: Sequence[uuid.UUID], before: Entry | None, count: int
    ) -> list[list[Entry] | None]:
        """Return, per owner, up to ``count`` entries strictly before ``before`` (newest
        first), or None where the timeline does not exist; one round trip for all."""
        return await read_pages([(self, o) for o in owners], before, count)

    async def exists(self, owner: uuid.UUID) -> bool:
        """Whether the owner's timeline exists (is complete)."""
        return bool(await self.redis.exists(self.key(owner)))

    async def drop(self, owner: uuid.UUID) -> None:
        """Delete the owner's timeline, so the next read rebuilds it."""
        await self.redis.delete(self.key(owner))

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
        if not await self.redis.set(lock, token, nx=True, px=30_000):
            raise RebuildBusyError(key)
        try:
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.delete(build, gone)
                pipe.zadd(build, {SENTINEL: 0})
                pipe.pexpire(build, 60_000)
                await pipe.execute()
            entries = await load()
            args: list[int | bytes] = [token, self.max_len, self.ttl_s]
            for e in entries:
                args += [e.score, e.member]
            return bool(await self._finish(keys=[key, build, lock, gone], args=args))
        finally:
            # Release the lock if _finish did not (load() failed, or the build vanished).
            if await self.redis.get(lock) == token:
                await self.redis.delete(lock)


async def read_pages(
    wanted: Sequence[tuple[Timelines, uuid.UUID]], before: Entry | None, count: int
) -> list[list[Entry] | None]:
    """Read one page from each (timelines, owner) in one pipelined round trip.

    Per timeline: up to ``count`` entries strictly before ``before`` (newest first), or
    None if the timeline does not exist. Reading refreshes the TTL. Entries tied with
    ``before`` on score are fetched and filtered here, so no entry is skipped or
    repeated across pages. All the timelines must share one Redis client.
    """
    if not wanted:
        return []
    redis = wanted[0][0].redis
    fetch = count + 8  # a few extra for entries tied with the cursor
    async with redis.pipeline(transaction=False) as pipe:
        for tl, owner in wanted:
            pipe.expire(tl.key(owner), tl.ttl_s)
            _queue_range(pipe, tl.key(owner), before, fetch)
        replies = await pipe.execute()
    out: list[list[Entry] | None] = []
    for (tl, owner), exists, rows in zip(wanted, replies[0::2], replies[1::2], strict=True):
        if not exists:
            out.append(None)
            continue
        entries, n = _after(rows, before), fetch
        while len(entries) < count and len(rows) == n:  # many ties at the cursor: go deeper
            n *= 4
            async with redis.pipeline(transaction=False) as pipe:
                _queue_range(pipe, tl.key(owner), before, n)
                (rows,) = await pipe.execute()
            entries = _after(rows, before)
        out.append(entries[:count])
    return out


def _queue_range(pipe, key: str, before: Entry | None, num: int) -> None:
    max_score = before.score if before else "+inf"
    pipe.zrange(key, max_score, "(0", desc=True, byscore=True, offset=0, num=num, withscores=True)


def _after(rows, before: Entry | None) -> list[Entry]:
    entries = [Entry(int(s), uuid.UUID(bytes=m)) for m, s in rows]
    return [e for e in entries if e < before] if before is not None else entries
