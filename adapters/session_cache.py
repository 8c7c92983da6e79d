"""The session cache on Redis (:class:`domain.identity.session_store.SessionStore`):
which sessions and accounts may act, kept in Redis so that a
request costs one round trip to check its access token's session and to mark its user
active (docs/api/sessions.md "Sessions"; docs/design.md "Decided in the second round").

PostgreSQL is the source of truth (``sessions.revoked_at``, ``users.status``); Redis
holds, per user, a hash ``roost:auth:{<user id>}`` with the account's status (field
``st``) and one field per session (family id) seen lately, ``1`` live or ``0`` ended.
The hash lives ``ttl_s`` (at least an access token's lifetime) from the last time a
session of the user ended, or from when it was first filled, so a revoked session's
marker outlives every access token issued for it. It shares its hash tag with the
activity marker ``active:{<user id>}`` (domain.feed.activity), so one script touches
one Redis Cluster slot:

- :meth:`SessionStore.admit`: one script reads the status and the session's field and,
  when both say yes, sets the activity marker (``SET NX``, an hour): one round trip.
- A miss (the hash or the field is not there) reads PostgreSQL once and
  :meth:`SessionStore.fill` writes what it read with ``HSETNX``, so a fill that read
  before a concurrent log-out committed never overwrites the log-out's ``0``.
- :meth:`SessionStore.end` (log-out, reuse of a rotated refresh token, ban, deletion,
  later a password change) writes ``0`` over each ended session, or the new status,
  resets the expiry and PUBLISHes a ``{"type": "session"}`` event on the user's
  real-time channel in the same script, so every API process re-checks that user's open
  WebSockets at once.
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
    """The verdict in the reply of a queued admit (:meth:`SessionStore.queue_admit`);
    None when the cache does not know (read PostgreSQL, then fill)."""
    return _reply(reply)


class RedisSessionStore:
    """The Redis side of sessions; see the module. Redis errors leave as
    :class:`domain.errors.StoreError`: callers fall back to PostgreSQL."""

    def __init__(self, redis: Redis, *, ttl_s: int) -> None:
        self.redis = redis
        self.ttl_s = ttl_s
        self._activity_s = int(ACTIVITY_GRANULARITY.total_seconds())
        self._admit = redis.register_script(_ADMIT)
        self._fill = redis.register_script(_FILL)
        self._end = redis.register_script(_END)

    @translated
    async def admit(self, user_id: uuid.UUID, session_id: uuid.UUID) -> Verdict | None:
        """The cached verdict of the session, marking the user active when admitted
        (one round trip); None when the cache does not know (read PostgreSQL, then
        :meth:`fill`)."""
        reply = await self._admit(
            keys=[auth_key(user_id), activity_key(user_id)],
            args=[_field(session_id), self._activity_s],
        )
        return _reply(reply)

    def queue_admit(self, pipe: Any, user_id: uuid.UUID, session_id: uuid.UUID) -> None:
        """Queue :meth:`admit` on ``pipe`` (a pipeline of the same Redis, so the check
        shares a round trip with another command); :func:`admit_reply` reads its
        reply. The script must be loaded (a ``NoScriptError`` reply: call :meth:`admit`)."""
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
        """Mark ``session_ids`` ended (and the account ``status``, if given) after
        PostgreSQL committed it, and tell the user's open sockets (one round trip)."""
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
