"""Per-user rate limits on Redis: GCRA in one Lua call (docs/api/limits.md "HTTP
guards", Rate limits).

Each budget of ``limit`` units per ``period`` is stored as its theoretical arrival time
(µs of Redis's clock); a ``cost`` moves it by ``cost * period / limit``, refused past
``period`` ahead. One script call charges every bucket of a principal only if all allow
it; keys ``roost:rl:{<principal>}:<budget>`` hash-tag the principal.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import NoScriptError

from adapters.resp_link import AutoPipeline, RespBatch

#: KEYS: the buckets; ARGV per bucket: interval (µs per unit), period (µs), cost. Returns
#: {1, units left, µs until full, index} of the emptiest bucket when all allow (and are
#: charged), else {0, µs to wait, index of the refusing one}. The server's TIME keeps
#: every API process on one clock.
_GCRA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tats = {}
local wait, refused = 0, 0
for i = 1, #KEYS do
  local interval = tonumber(ARGV[3 * i - 2])
  local period = tonumber(ARGV[3 * i - 1])
  local cost = tonumber(ARGV[3 * i])
  local tat = tonumber(redis.call('GET', KEYS[i]) or '0')
  if tat < now then tat = now end
  local new_tat = tat + interval * cost
  local allow_at = new_tat - period
  if allow_at > now and allow_at - now > wait then
    wait, refused = allow_at - now, i
  end
  tats[i] = new_tat
end
if wait > 0 then return {0, wait, refused} end
local least, reset, which = -1, 0, 0
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], string.format('%d', tats[i]),
             'PX', math.ceil((tats[i] - now) / 1000) + 1)
  local left = math.floor((now + tonumber(ARGV[3 * i - 1]) - tats[i]) / tonumber(ARGV[3 * i - 2]))
  if which == 0 or left < least then least, reset, which = left, tats[i] - now, i end
end
return {1, least, reset, which}
"""


@dataclass(frozen=True)
class Budget:
    """One rate budget: ``limit`` units per ``period_s`` seconds (burst: ``limit``)."""

    name: str
    limit: int
    period_s: float

    @property
    def interval_us(self) -> int:
        """Microseconds one unit occupies (at least 1)."""
        return max(1, round(self.period_s * 1_000_000 / self.limit))

    @property
    def period_us(self) -> int:
        """The period in microseconds: ``limit`` units spaced by ``interval_us``."""
        return self.interval_us * self.limit


@dataclass(frozen=True)
class Charge:
    """``cost`` units of ``budget`` charged to ``principal`` (``u:<uuid>`` or ``ip:<addr>``)."""

    budget: Budget
    principal: str
    cost: int = 1

    @property
    def key(self) -> str:
        return f"roost:rl:{{{self.principal}}}:{self.budget.name}"


@dataclass(frozen=True)
class Decision:
    """The limiter's answer: ``allowed``, else the refusing budget and ``retry_after_s``
    seconds; an allowed one gives the emptiest bucket's ``limit``, ``remaining`` and
    ``reset_s``, and every charged budget as ``policies`` (``"600;w=60"``)."""

    allowed: bool
    retry_after_s: float = 0.0
    budget: str | None = None
    limit: int | None = None
    remaining: int | None = None
    reset_s: float = 0.0
    policies: tuple[str, ...] = ()

    @property
    def retry_after_header(self) -> str:
        """``Retry-After`` as RFC 9110 delay-seconds: whole seconds, at least 1."""
        return str(max(1, math.ceil(self.retry_after_s)))

    def headers(self) -> dict[str, str]:
        """``RateLimit-*`` headers (``-Reset`` in s; draft-ietf-httpapi-ratelimit-headers-06) of an
        allowed, charged request; empty otherwise (limits off, Redis down)."""
        if self.limit is None or self.remaining is None:
            return {}
        return {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(max(0, self.remaining)),
            "RateLimit-Reset": str(max(0, math.ceil(self.reset_s))),
            "RateLimit-Policy": ", ".join(self.policies),
        }


ALLOWED = Decision(True)


class RateLimiter:
    """Charges :class:`Charge` lists on Redis, one atomic script call per principal,
    stopping at the first refusal. Redis errors propagate (the caller fails open)."""

    def __init__(self, redis: Redis, pipeline: AutoPipeline) -> None:
        self._pipeline = pipeline
        self._script = redis.register_script(_GCRA)

    async def check(self, charges: list[Charge]) -> Decision:
        """Charge every bucket of ``charges`` if all of them allow it."""
        groups = _groups(charges)
        if isinstance(groups, Decision):
            return groups
        closest: tuple[int, float, Budget] | None = None
        for group in groups:
            keys, args = [c.key for c in group], _args(group)
            batch = RespBatch()
            batch.evalsha(self._script.sha, len(keys), *keys, *args)
            (reply,) = await self._pipeline.execute(batch)
            if isinstance(reply, NoScriptError):  # a restarted Redis: redis-py loads it
                reply = await self._script(keys=keys, args=args)
            elif isinstance(reply, Exception):
                raise reply
            refused, closest = _reply(group, reply, closest)
            if refused is not None:
                return refused
        return _allowed(charges, closest)

    def queue_check(
        self, batch: RespBatch, charges: list[Charge]
    ) -> Callable[[Any], Decision] | None:
        """Queue :meth:`check` on ``batch`` when it is one script call, and return what
        turns its reply into the decision; None otherwise. The script must be loaded (on
        a ``NoScriptError`` reply, call :meth:`check`)."""
        groups = _groups(charges)
        if isinstance(groups, Decision) or len(groups) != 1:
            return None
        (group,) = groups
        batch.evalsha(self._script.sha, len(group), *(c.key for c in group), *_args(group))

        def decide(reply: Any) -> Decision:
            refused, closest = _reply(group, reply, None)
            return refused if refused is not None else _allowed(charges, closest)

        return decide


def _groups(charges: list[Charge]) -> list[list[Charge]] | Decision:
    """The charges grouped by principal (one script call each), or the refusal of a
    charge over its whole budget (waiting never helps)."""
    groups: dict[str, list[Charge]] = {}
    for charge in charges:
        if charge.cost > charge.budget.limit:
            return Decision(False, charge.budget.period_s, charge.budget.name)
        if charge.cost > 0:
            groups.setdefault(charge.principal, []).append(charge)
    return list(groups.values())


def _args(group: list[Charge]) -> list[int]:
    args: list[int] = []
    for charge in group:
        args += [charge.budget.interval_us, charge.budget.period_us, charge.cost]
    return args


def _reply(
    group: list[Charge], reply: Any, closest: tuple[int, float, Budget] | None
) -> tuple[Decision | None, tuple[int, float, Budget] | None]:
    """The refusal in a group's script reply (None: allowed), and the bucket closest to
    empty so far."""
    if not int(reply[0]):
        budget = group[int(reply[2]) - 1].budget.name
        return Decision(False, int(reply[1]) / 1_000_000, budget), closest
    left, full_in_us, which = int(reply[1]), int(reply[2]), int(reply[3])
    if closest is None or left < closest[0]:
        closest = (left, full_in_us / 1_000_000, group[which - 1].budget)
    return None, closest


def _allowed(charges: list[Charge], closest: tuple[int, float, Budget] | None) -> Decision:
    if closest is None:
        return ALLOWED
    left, reset_s, budget = closest
    policies = tuple(dict.fromkeys(f"{c.budget.limit};w={c.budget.period_s:g}" for c in charges))
    return Decision(
        True,
        budget=budget.name,
        limit=budget.limit,
        remaining=left,
        reset_s=reset_s,
        policies=policies,
    )
