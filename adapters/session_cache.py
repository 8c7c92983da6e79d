""":class:`domain.identity.session_store.SessionStore` on Redis (docs/api/sessions.md
"Sessions"). Per user, hash ``roost:auth:{<user id>}``: ``st`` the status, ``s:<id>``
``1`` live / ``0`` ended; it lives ``ttl_s`` (>= an access token's lifetime) from the
last end or first fill, and shares its hash tag with ``active:{<user id>}``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from redis.asyncio import Redis

from adapters.redis_errors import translated
from domain.feed.activity import ACTIVITY_GRANULARITY, activity_key
from domain.identity.session_store import SESSION_EVENT, Admission, Verdict, verdict_of
from domain.realtime.channels import user_channel

# KEYS: the user's auth hash, the activity marker. ARGV: the session's field, the
# marker's lifetime (s). Returns {status or '', session flag or '', marked (0/1)}.
_ADMIT = """
local v = redis.call('HMGET', KEYS[1], 'st', ARGV[1])
local marked = 0
if v[1] == 'active' and v[2] == '1' then
  if redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[2]) then marked = 1 end
end
return {v[1] or '', v[2] or '', marked}
"""

# KEYS: as _ADMIT. ARGV: the session's field, the status and session flag read from
# PostgreSQL, the hash's lifetime (s), the marker's lifetime (s). Fills only what is
# missing (an ended session written meanwhile wins), then answers as _ADMIT.
_FILL = """
redis.call('HSETNX', KEYS[1], 'st', ARGV[2])
redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[3])
if redis.call('TTL', KEYS[1]) < 0 then redis.call('EXPIRE', KEYS[1], ARGV[4]) end
local v = redis.call('HMGET', KEYS[1], 'st', ARGV[1])
local marked = 0
if v[1] == 'active' and v[2] == '1' then
  if redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[5]) then marked = 1 end
end
return {v[1] or '', v[2] or '', marked}
"""

# KEYS: the user's auth hash. ARGV: the hash's lifetime (s), the new status or '', the
# channel, the event, then the fields of the ended sessions.
_END = """
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'st', ARGV[2]) end
for i = 5, #ARGV do redis.call('HSET', KEYS[1], ARGV[i], '0') end
redis.call('EXPIRE', KEYS[1], ARGV[1])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
"""


def auth_key(user_id: uuid.UUID) -> str:
    """``roost:auth:{<user id>}``: the user's cached status and sessions."""
    return f"roost:auth:{{{user_id}}}"


def _field(session_id: uuid.UUID) -> str:
    return f"s:{session_id}"


def _reply(reply: Sequence[Any]) -> Verdict | None:
    status, live, marked = (x.decode() if isinstance(x, bytes) else x for x in reply)
    if status and status != "active":
        return Verdict(Admission.UNAVAILABLE)  # whatever the session
    if not status or not live:
        return None
    return verdict_of(status, live == "1", bool(int(marked)))


def admit_reply(reply: Sequence[Any]) -> Verdict | None:
    """The verdict of a queued admit's reply; None when the cache does not know."""
    return _reply(reply)


class RedisSessionStore:
    """Redis errors raise :class:`domain.errors.StoreError` (callers use PostgreSQL)."""

    def __init__(self, redis: Redis, *, ttl_s: int) -> None:
        self.redis = redis
        self.ttl_s = ttl_s
        self._activity_s = int(ACTIVITY_GRANULARITY.total_seconds())
        self._admit = redis.register_script(_ADMIT)
        self._fill = redis.register_script(_FILL)
        self._end = redis.register_script(_END)

    @translated
    async def admit(self, user_id: uuid.UUID, session_id: uuid.UUID) -> Verdict | None:
        """The cached verdict, marking the user active when admitted; None when the
        cache does not know (read PostgreSQL, then :meth:`fill`)."""
        reply = await self._admit(
            keys=[auth_key(user_id), activity_key(user_id)],
            args=[_field(session_id), self._activity_s],
        )
        return _reply(reply)

    def queue_admit(self, pipe: Any, user_id: uuid.UUID, session_id: uuid.UUID) -> None:
        """Queue :meth:`admit` on a pipeline of this Redis; :func:`admit_reply` reads
        it. The script must be loaded (on ``NoScriptError`` call :meth:`admit`)."""
        pipe.evalsha(
            self._admit.sha,
            2,
            auth_key(user_id),
            activity_key(user_id),
            _field(session_id),
            self._activity_s,
        )

    @translated
    async def fill(
        self, user_id: uuid.UUID, session_id: uuid.UUID, status: str | None, live: bool
    ) -> Verdict:
        """Cache what PostgreSQL said (without overwriting an ended session or a status
        written meanwhile) and return the verdict then in the cache."""
        reply = await self._fill(
            keys=[auth_key(user_id), activity_key(user_id)],
            args=[
                _field(session_id),
                status or "deleted",
                "1" if live else "0",
                self.ttl_s,
                self._activity_s,
            ],
        )
        return _reply(reply) or verdict_of(status, live)

    @translated
    async def end(
        self,
        user_id: uuid.UUID,
        session_ids: Iterable[uuid.UUID] = (),
        *,
        status: str | None = None,
    ) -> None:
        """After PostgreSQL committed, mark ``session_ids`` ended (and ``status``) and
        publish a session event to the user's sockets, atomically."""
        event = json.dumps({"type": SESSION_EVENT}, separators=(",", ":"))
        await self._end(
            keys=[auth_key(user_id)],
            args=[
                self.ttl_s,
                status or "",
                user_channel(user_id),
                event,
                *(_field(s) for s in session_ids),
            ],
        )
