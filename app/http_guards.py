"""The Redis-backed guards of the GraphQL endpoint (rate limits, automatic persisted
queries, ``Idempotency-Key``) and their configuration, with the fail-open rule: a Redis
failure never fails a request (docs/api/limits.md "HTTP guards")."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from prometheus_client import Counter
from redis.asyncio import Redis
from redis.exceptions import RedisError

from adapters.resp_link import AutoPipeline, RespBatch
from adapters.session_cache import admit_reply as session_reply
from app.guard_rules import OperationInfo
from app.idempotency import (
    Claim,
    IdempotencyStore,
    StoredResponse,
)
from app.persisted_queries import PersistedQueryStore
from app.ratelimit import ALLOWED, Budget, Charge, Decision, RateLimiter
from app.sessions import Doorkeeper, Refusal
from app.settings import Settings
from domain.identity.tokens import AccessClaims

log = logging.getLogger("roost.http")

RATE_LIMITED = Counter(
    "roost_rate_limited_total", "GraphQL requests refused by a rate limit.", ["budget"]
)
FAIL_OPEN = Counter(
    "roost_http_guard_fail_open_total",
    "Requests served without a guard (rate limit, persisted queries, idempotency) "
    "because Redis failed.",
    ["guard"],
)
FAIL_CLOSED = Counter(
    "roost_http_guard_fail_closed_total",
    "Requests refused because a guard that fails closed (the sign-in budget) could not"
    " reach Redis.",
    ["guard"],
)
REPLAYS = Counter(
    "roost_idempotent_replays_total", "Mutations answered from a stored Idempotency-Key response."
)
PERSISTED = Counter(
    "roost_persisted_queries_total",
    "Automatic persisted query lookups and registrations.",
    ["result"],  # hit | miss | stored | not_stored
)


#: Seconds the guards leave Redis alone after it failed.
REDIS_RETRY_S = 1.0

T = TypeVar("T")


@dataclass(frozen=True)
class GuardConfig:
    """The guards' knobs, from :class:`~app.settings.Settings`."""

    rate_limit_enabled: bool
    requests: Budget
    mutations: Budget
    auth: Budget
    apq_enabled: bool
    apq_ttl_s: int
    apq_max_bytes: int
    idempotency_ttl_s: int
    idempotency_lock_s: int
    idempotency_wait_ms: int
    redis_timeout_s: float
    max_tokens: int

    @classmethod
    def from_settings(cls, settings: Settings) -> GuardConfig:
        period = settings.rate_limit_window_s
        return cls(
            rate_limit_enabled=settings.rate_limit_enabled,
            requests=Budget("all", settings.rate_limit_requests, period),
            mutations=Budget("mutations", settings.rate_limit_mutations, period),
            auth=Budget("auth", settings.rate_limit_auth, period),
            apq_enabled=settings.apq_enabled,
            apq_ttl_s=settings.apq_ttl_days * 86_400,
            apq_max_bytes=settings.apq_max_query_bytes,
            idempotency_ttl_s=settings.idempotency_ttl_hours * 3_600,
            idempotency_lock_s=settings.idempotency_lock_s,
            idempotency_wait_ms=settings.idempotency_wait_ms,
            redis_timeout_s=settings.guard_redis_timeout_ms / 1000,
            max_tokens=settings.max_tokens,
        )


class HttpGuards:
    """The guards' Redis client (short timeouts, its own pool), stores and limiter, with
    fail-open wrappers: every method here returns a harmless default when Redis fails,
    and counts it. ``redis_url=None``: no Redis, every guard is off."""

    def __init__(self, config: GuardConfig, redis_url: str | None) -> None:
        self.config = config
        self.redis: Redis | None = (
            Redis.from_url(
                redis_url,
                socket_timeout=config.redis_timeout_s,
                socket_connect_timeout=config.redis_timeout_s,
            )
            if redis_url
            else None
        )
        self._down_until = 0.0
        if self.redis is not None:
            self.pipeline = AutoPipeline(self.redis)  # the per-request round trips
            self.limiter = RateLimiter(self.redis, self.pipeline)
            self.apq = PersistedQueryStore(
                self.redis, ttl_s=config.apq_ttl_s, max_bytes=config.apq_max_bytes
            )
            self.idempotency = IdempotencyStore(
                self.redis,
                ttl_s=config.idempotency_ttl_s,
                lock_s=config.idempotency_lock_s,
                wait_ms=config.idempotency_wait_ms,
            )

    @classmethod
    def from_settings(cls, settings: Settings) -> HttpGuards:
        return cls(GuardConfig.from_settings(settings), settings.redis_url)

    async def aclose(self) -> None:
        if self.redis is not None:
            await self.pipeline.aclose()
            await self.redis.aclose()

    def redis_up(self) -> bool:
        """Whether to use Redis now (configured, and not failed in the last second)."""
        return self.redis is not None and time.monotonic() >= self._down_until

    def redis_failed(self, guard: str, *, closed: bool = False) -> None:
        """Count and log a Redis failure of ``guard`` (refusing when ``closed``, else
        serving without it); leave Redis alone for a second."""
        self._down_until = time.monotonic() + REDIS_RETRY_S
        (FAIL_CLOSED if closed else FAIL_OPEN).labels(guard).inc()
        log.warning(
            "%s: Redis unavailable, %s",
            guard,
            "refusing" if closed else "serving without it",
            exc_info=True,
        )

    async def _guarded(
        self, guard: str, call: Callable[[], Awaitable[T]], default: T, *, closed: bool = False
    ) -> T:
        """``call()``, or ``default`` when Redis is absent, failed in the last second or
        fails now (counted by ``guard`` as failing open, or ``closed``)."""
        if self.redis is None:
            return default
        if not self.redis_up():
            (FAIL_CLOSED if closed else FAIL_OPEN).labels(guard).inc()
            return default
        try:
            return await call()
        except RedisError:
            self.redis_failed(guard, closed=closed)
            return default

    async def rate_check(self, charges: list[Charge]) -> Decision:
        """The limiter's decision; allowed when limits are off. When Redis fails or is
        slow, an operation spending the sign-in budget is refused ``RATE_LIMITED`` (guard
        ``signin``, failing closed), any other allowed (guard ``ratelimit``, failing open):
        docs/api/limits.md "When Redis fails"."""
        if not self.config.rate_limit_enabled or not charges:
            return ALLOWED
        auth = self.config.auth
        if any(c.budget is auth for c in charges):
            refused = Decision(False, retry_after_s=REDIS_RETRY_S, budget=auth.name)
            return await self._guarded(
                "signin", lambda: self.limiter.check(charges), refused, closed=True
            )
        return await self._guarded("ratelimit", lambda: self.limiter.check(charges), ALLOWED)

    async def charge(self, principal: str, ip: str, info: OperationInfo | None) -> Decision:
        """Charge one operation to its budgets, whatever its transport (refusals counted;
        docs/api/limits.md "HTTP guards")."""
        decision = await self.rate_check(self.charges(principal, ip, info))
        if not decision.allowed:
            RATE_LIMITED.labels(decision.budget or "unknown").inc()
        return decision

    def charges(self, principal: str, ip: str, info: OperationInfo | None) -> list[Charge]:
        """What :meth:`charge` charges."""
        cfg = self.config
        charges = [Charge(cfg.requests, principal)]
        if info is not None and info.kind == "mutation":
            charges.append(Charge(cfg.mutations, principal, info.mutation_count))
            if info.auth_count:
                charges.append(Charge(cfg.auth, f"ip:{ip}", info.auth_count))
        return charges

    async def admit_and_charge(
        self,
        doorkeeper: Doorkeeper,
        claims: AccessClaims,
        principal: str,
        ip: str,
        info: OperationInfo,
    ) -> tuple[AccessClaims | Refusal, Decision] | None:
        """:meth:`Doorkeeper.recheck` and :meth:`charge` in one Redis round trip; None
        when they cannot share one (the caller then makes both calls). Raises
        :class:`AdmissionUnavailable` as ``recheck`` does."""
        store = doorkeeper.store
        if (
            not self.config.rate_limit_enabled
            or store is None
            or store.redis is not self.redis
            or not self.redis_up()
        ):
            return None
        assert self.redis is not None
        batch = RespBatch()
        store.queue_admit(batch, claims.user_id, claims.session_id)
        decide = self.limiter.queue_check(batch, self.charges(principal, ip, info))
        if decide is None:
            return None
        try:
            admit_reply, charge_reply = await self.pipeline.execute(batch)
        except RedisError:
            self.redis_failed("sessions")
            return None
        if isinstance(admit_reply, Exception) or isinstance(charge_reply, Exception):
            return None  # NoScriptError after a restart: the scripts' own calls load them
        verdict = session_reply(admit_reply)
        if verdict is None:  # the cache does not know the session: PostgreSQL, then fill
            outcome = await doorkeeper.recheck(claims)
        else:
            outcome = await doorkeeper.settle(claims, verdict)
        decision = decide(charge_reply)
        if not decision.allowed:
            RATE_LIMITED.labels(decision.budget or "unknown").inc()
        return outcome, decision

    async def apq_get(self, sha256: str) -> str | None:
        """The persisted query of ``sha256``; None when unknown or Redis failed."""
        return await self._guarded("apq", lambda: self.apq.get(sha256), None)

    async def apq_put(self, sha256: str, query: str) -> bool:
        """Store a persisted query; False when not stored (too big, Redis failed)."""
        return await self._guarded("apq", lambda: self.apq.put(sha256, query), False)

    async def idem_begin(self, key: str, fp: str) -> Claim | StoredResponse | None:
        """:meth:`IdempotencyStore.begin` (its errors); None when Redis failed."""
        return await self._guarded("idempotency", lambda: self.idempotency.begin(key, fp), None)

    async def idem_complete(self, claim: Claim, response: StoredResponse) -> None:
        """Store the response of a claimed key (the pending record expires if this fails)."""
        await self._guarded("idempotency", lambda: self.idempotency.complete(claim, response), None)

    async def idem_release(self, claim: Claim) -> None:
        """Free a claimed key (the pending record expires if this fails)."""
        await self._guarded("idempotency", lambda: self.idempotency.release(claim), None)
