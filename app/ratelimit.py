"""Per-user rate limits on Redis: GCRA in one Lua call (design.md "GraphQL API
conventions": per-user rate limits).

Every budget is a GCRA (generic cell rate algorithm) bucket: ``limit`` units per
``period`` with a burst of ``limit``, stored as one key holding the bucket's
*theoretical arrival time* (TAT, microseconds of Redis's clock). A request that costs
``cost`` units moves the TAT forward by ``cost * period / limit``; it is refused when the
new TAT would be more than ``period`` ahead of now, and ``Retry-After`` is how long until
it no longer would be. One script call checks every bucket of a request and charges
them only if all of them allow it, so a refused request costs nothing.

Keys (``roost:rl:{<principal>}:<budget>``) carry the principal as a hash tag, so the
buckets of one principal share a Redis Cluster slot and one script call sees them all:
``{u:<user id>}`` for a signed-in user, ``{ip:<client address>}`` for anonymous
requests and for the sign-in budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from redis.asyncio import Redis

#: KEYS: the buckets. ARGV: three numbers per bucket: emission interval (µs per unit),
#: period (µs, also the burst tolerance), cost (units). Returns {1, 0} when every bucket
#: allows the request (and charges them all), else {0, µs to wait, index of the bucket
#: that refused}. Time comes from the server (TIME), so every API process agrees on it.
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
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], string.format('%d', tats[i]),
             'PX', math.ceil((tats[i] - now) / 1000) + 1)
end
return {1, 0, 0}
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
        """The bucket's Redis key, hash-tagged by principal."""
        return f"roost:rl:{{{self.principal}}}:{self.budget.name}"


@dataclass(frozen=True)
class Decision:
    """The limiter's answer: ``allowed``, else the budget that refused and how long to
    wait (seconds) before the same request would be allowed."""

    allowed: bool
    retry_after_s: float = 0.0
    budget: str | None = None

    @property
    def retry_after_header(self) -> str:
        """``Retry-After`` as RFC 9110 delay-seconds: whole seconds, at least 1."""
        return str(max(1, math.ceil(self.retry_after_s)))


ALLOWED = Decision(True)


class RateLimiter:
    """Checks and charges :class:`Charge` lists against Redis.

    ``await limiter.check(charges)`` returns a :class:`Decision`. Charges are grouped by
    principal (one hash-tag slot each); each group is one atomic script call, so a
    request costs one round trip, two when a signed-in client also spends an
    IP-scoped budget (logIn/signUp). Groups run in order and stop at the first refusal.
    Redis errors propagate (:class:`redis.exceptions.RedisError`): the caller decides to
    fail open.
    """

    def __init__(self, redis: Redis) -> None:
        self._script = redis.register_script(_GCRA)

    async def check(self, charges: list[Charge]) -> Decision:
        """Charge every bucket of ``charges`` if all of them allow it; see the class."""
        groups: dict[str, list[Charge]] = {}
        for charge in charges:
            if charge.cost > charge.budget.limit:
                # Alone over the whole budget: waiting never helps.
                return Decision(False, charge.budget.period_s, charge.budget.name)
            if charge.cost > 0:
                groups.setdefault(charge.principal, []).append(charge)
        for group in groups.values():
            args: list[int] = []
            for charge in group:
                args += [charge.budget.interval_us, charge.budget.period_us, charge.cost]
            ok, wait_us, refused = await self._script(keys=[c.key for c in group], args=args)
            if not int(ok):
                budget = group[int(refused) - 1].budget.name
                return Decision(False, int(wait_us) / 1_000_000, budget)
        return ALLOWED
