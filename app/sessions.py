"""Admission of a bearer token, the same for every transport (docs/api/sessions.md
"Sessions"): :class:`Doorkeeper` turns it into the claims of a token whose session may
act now, or a :class:`Refusal`."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from redis.asyncio import Redis
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.session_cache import RedisSessionStore
from adapters.unavailable import unavailable_dependency
from app.throttle import ThrottledLog
from domain.errors import DomainError, StoreError
from domain.feed.activity import note_active
from domain.feed.config import FeedConfig, FeedStores
from domain.identity.admit_session import ACCOUNT_UNAVAILABLE, admit_session
from domain.identity.session_store import Admission, Verdict
from domain.identity.tokens import AccessClaims, TokenConfig, decode_access_claims

log = logging.getLogger("roost.sessions")

SESSION_ENDED = "The session has ended: sign in again."


class AdmissionUnavailable(Exception):
    """The session could not be checked: ``dependency`` (``postgres`` or ``redis``) is
    down; the caller answers ``SERVICE_UNAVAILABLE``."""

    def __init__(self, dependency: str) -> None:
        super().__init__(f"{dependency} is unavailable")
        self.dependency = dependency


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a bearer token may not act: ``UNAUTHENTICATED`` with this message (HTTP 401)."""

    message: str


class RedisHealth(Protocol):
    """Whether Redis answers, as the HTTP guards track it (``app.http_guards``)."""

    def redis_up(self) -> bool: ...

    def redis_failed(self, guard: str) -> None: ...


def session_store(redis: Redis | None, tokens: TokenConfig) -> RedisSessionStore | None:
    """The session cache on ``redis`` (None: PostgreSQL answers); entries outlive an
    access token by a minute, so an ended session's marker outlives its tokens."""
    if redis is None:
        return None
    return RedisSessionStore(redis, ttl_s=int(tokens.access_ttl.total_seconds()) + 60)


class Doorkeeper:
    """Admits bearer tokens; see the module."""

    def __init__(
        self,
        *,
        engine: AsyncEngine,
        tokens: TokenConfig,
        store: RedisSessionStore | None,
        feed_stores: FeedStores | None,
        feed_config: FeedConfig,
        guards: RedisHealth | None = None,
    ) -> None:
        self.engine = engine
        self.tokens = tokens
        self.store = store
        self.guards = guards  # whether Redis is up, shared with the HTTP guards
        self.feed_stores = feed_stores
        self.feed_config = feed_config
        self._activity_failures = ThrottledLog(log, every_s=60.0)

    def claims(self, bearer: str) -> AccessClaims | Refusal:
        """The claims of a well-formed, well-signed, unexpired access token (no I/O)."""
        try:
            return decode_access_claims(self.tokens, bearer)
        except DomainError as exc:
            return Refusal(exc.message)

    async def admit(self, bearer: str) -> AccessClaims | Refusal:
        """The claims of ``bearer`` if its session may act now, else why not."""
        claims = self.claims(bearer)
        if isinstance(claims, Refusal):
            return claims
        return await self.recheck(claims)

    async def recheck(self, claims: AccessClaims) -> AccessClaims | Refusal:
        """:meth:`admit` for claims already verified (a WebSocket's, later on). Raises
        :class:`AdmissionUnavailable` when neither the cache nor PostgreSQL can answer."""
        try:
            verdict = await self._verdict(claims)
        except Exception as exc:
            dependency = unavailable_dependency(exc)
            if dependency is None:
                raise
            raise AdmissionUnavailable(dependency) from exc
        return await self.settle(claims, verdict)

    async def settle(self, claims: AccessClaims, verdict: Verdict) -> AccessClaims | Refusal:
        """The outcome of a session cache ``verdict`` the caller read on verified
        ``claims``, recording the user's activity when the verdict marked it."""
        if verdict.admission is Admission.ENDED:
            return Refusal(SESSION_ENDED)
        if verdict.admission is Admission.UNAVAILABLE:
            return Refusal(ACCOUNT_UNAVAILABLE)
        if verdict.marked_active and self.feed_stores is not None:
            try:
                await note_active(self.engine, self.feed_stores, self.feed_config, claims.user_id)
            except (StoreError, DBAPIError, OSError) as exc:
                # Best effort; during an outage every request lands here: one line a minute.
                self._activity_failures.warn(
                    "could not record activity (%s: %s); requests go on", type(exc).__name__, exc
                )
        return claims

    async def _verdict(self, claims: AccessClaims):
        """The session cache's verdict (one round trip), else PostgreSQL's."""
        if self.store is not None and (self.guards is None or self.guards.redis_up()):
            try:
                return await admit_session(self.engine, self.store, claims)
            except StoreError:
                if self.guards is not None:
                    self.guards.redis_failed("sessions")
        return await admit_session(self.engine, None, claims)
