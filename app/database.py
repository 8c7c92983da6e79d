"""The async SQLAlchemy engines (asyncpg): the primary, and read replicas
(docs/operations/scaling.md "Scaling out"). :class:`ReadRouting` sends a GraphQL query's
reads to a replica at most REPLICA_MAX_LAG_S behind, unless the viewer wrote recently."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import asyncpg
from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from adapters.postgres import commits, stale_statements
from adapters.postgres.fetch import fetch
from domain.reads import use_round_trip

log = logging.getLogger("roost.replicas")

#: Every connection: UTC, named, no JIT (milliseconds to compile, paid off only by long
#: analytic queries; short OLTP statements can still cross ``jit_above_cost``).
_SERVER_SETTINGS = {"timezone": "UTC", "application_name": "roost", "jit": "off"}


def async_url(url: str) -> str:
    """Return ``url`` with the ``postgresql+asyncpg`` driver (accepts postgres://, postgresql://)."""
    u = make_url(url.replace("postgres://", "postgresql://", 1))
    return u.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)


#: Engines built here read a single statement in one round trip on asyncpg.
use_round_trip(fetch)


def asyncpg_dsn(url: str) -> str:
    """``url`` as a DSN that asyncpg.connect accepts (``postgresql://…``)."""
    u = make_url(url.replace("postgres://", "postgresql://", 1))
    return u.set(drivername="postgresql").render_as_string(hide_password=False)


def create_engine(
    url: str,
    *,
    pool_size: int = 20,
    max_overflow: int = 0,
    connect_timeout_s: float = 5.0,
    pool_timeout_s: float = 10.0,
) -> AsyncEngine:
    """An AsyncEngine over asyncpg with UTC sessions, no pre-ping (a broken connection fails one
    statement and invalidates the pool); stale cached plans are retried."""
    engine = create_async_engine(
        async_url(url),
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_recycle=1800,
        pool_timeout=pool_timeout_s,
        connect_args={"server_settings": _SERVER_SETTINGS, "timeout": connect_timeout_s},
    )
    commits.track(engine)  # what a mutation committed (app/operation.py ErrorMasking)
    return stale_statements.install(engine)


def create_replica_engine(
    url: str, primary_url: str, *, pool_size: int = 20, max_overflow: int = 0, on_fallback=None
) -> AsyncEngine:
    """An engine on the replica at ``url`` that never fails a read for the replica's
    sake: each checkout pings, and a refused connection is opened on the primary
    instead (``on_fallback()`` is told)."""
    replica, primary = asyncpg_dsn(url), asyncpg_dsn(primary_url)

    async def connect() -> asyncpg.Connection:
        try:
            return await asyncpg.connect(replica, timeout=2, server_settings=_SERVER_SETTINGS)
        except (OSError, asyncpg.PostgresError, TimeoutError):
            if on_fallback is not None:
                on_fallback()
            return await asyncpg.connect(primary, server_settings=_SERVER_SETTINGS)

    engine = create_async_engine(
        async_url(url),
        async_creator=connect,
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_recycle=1800,
        pool_pre_ping=True,
    )
    return stale_statements.install(engine)


@dataclass
class Replica:
    """One replica: its engine, whether reads may go to it, and what the last check saw."""

    url: str
    engine: AsyncEngine
    usable: bool = False
    lag_s: float | None = None  # None: unreachable
    fell_back: bool = False  # some pooled connections went to the primary
    # Primary WAL positions seen by the checks and not yet replayed here, each with the
    # time of the round before the one that saw it (``_lag``).
    _behind: deque[tuple[int, float | None]] = field(default_factory=deque, repr=False)
    _probe: asyncpg.Connection | None = field(default=None, repr=False)


class ReadRouting:
    """Routes read-only queries to replicas found within ``max_lag_s`` every
    ``check_every_s``; :meth:`wrote` keeps a writer on the primary for ``max_lag_s``
    plus two checks."""

    def __init__(
        self,
        primary: AsyncEngine,
        primary_url: str,
        replica_urls: Sequence[str],
        redis: Redis | None,
        *,
        max_lag_s: float = 5.0,
        check_every_s: float = 1.0,
        pool_size: int = 20,
        max_overflow: int = 0,
    ) -> None:
        self.primary = primary
        self.redis = redis
        self.max_lag_s = max_lag_s
        self.check_every_s = check_every_s
        self.window_ms = int(1000 * (max_lag_s + 2 * check_every_s))
        self.replicas: list[Replica] = []
        for url in replica_urls:
            replica = Replica(url, None)  # type: ignore[arg-type]
            replica.engine = create_replica_engine(
                url,
                primary_url,
                pool_size=pool_size,
                max_overflow=max_overflow,
                on_fallback=lambda r=replica: self._fell_back(r),
            )
            self.replicas.append(replica)
        self._task: asyncio.Task | None = None
        self._checked = asyncio.Event()
        self._round_at: float | None = None  # monotonic time of the last round of checks

    async def engine_for(self, viewer: uuid.UUID | None) -> AsyncEngine:
        """The engine a query's reads use: a usable replica (at random), or the primary
        when none is usable, or the viewer wrote within the window, or Redis cannot
        tell (anonymous viewers never wrote)."""
        self.start()
        usable = [r for r in self.replicas if r.usable]
        if not usable:
            return self.primary
        if viewer is not None:
            if self.redis is None:
                return self.primary
            try:
                if await self.redis.exists(_marker(viewer)):
                    return self.primary
            except RedisError:
                log.warning("read-your-writes marker unreadable: primary", exc_info=True)
                return self.primary
        return random.choice(usable).engine

    async def wrote(self, viewer: uuid.UUID) -> None:
        """The viewer ran a mutation: their reads go to the primary for the window."""
        if self.redis is None or not self.replicas:
            return
        try:
            await self.redis.set(_marker(viewer), b"1", px=self.window_ms)
        except RedisError:
            log.warning("read-your-writes marker of %s not set", viewer, exc_info=True)

    def start(self) -> None:
        """Start the health checks (idempotent; needs a running loop)."""
        if self._task is None and self.replicas:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="replica-health")

    async def wait_checked(self) -> None:
        """Wait for the next completed round of checks (tests, readiness)."""
        self.start()
        self._checked.clear()
        await self._checked.wait()

    async def _run(self) -> None:
        while True:
            try:
                await self.check()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("replica health check failed", exc_info=True)
            self._checked.set()
            await asyncio.sleep(self.check_every_s)

    async def check(self) -> None:
        """One round: the primary's flushed WAL position (a replica receives no more),
        then each replica's state."""
        try:
            async with self.primary.connect() as conn:
                lsn = (
                    await conn.exec_driver_sql(
                        "SELECT (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::bigint"
                    )
                ).scalar()
        except Exception:
            log.warning("replica check: primary unreachable", exc_info=True)
            return
        if lsn is None:  # no row: nothing to compare the replicas with this round
            return
        now, previous = time.monotonic(), self._round_at
        self._round_at = now
        for replica in self.replicas:
            await self._check_one(replica, int(lsn), now, previous)

    async def _check_one(
        self, replica: Replica, primary_lsn: int, now: float, previous: float | None
    ) -> None:
        try:
            if replica._probe is None or replica._probe.is_closed():
                replica._probe = await asyncpg.connect(
                    asyncpg_dsn(replica.url), timeout=2, server_settings=_SERVER_SETTINGS
                )
            row = await replica._probe.fetchrow(
                "SELECT (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint AS replayed,"
                " extract(epoch FROM now() - pg_last_xact_replay_timestamp()) AS age",
                timeout=2,
            )
        except (OSError, asyncpg.PostgresError, TimeoutError, asyncpg.InterfaceError):
            if replica.usable or replica.lag_s is not None:
                log.warning("replica %s unreachable: reads go to the primary", _where(replica))
            replica.usable, replica.lag_s = False, None
            replica._behind.clear()
            if replica._probe is not None:
                with contextlib.suppress(Exception):
                    replica._probe.terminate()
                replica._probe = None
            return
        assert row is not None  # a SELECT without FROM returns one row
        lag = _lag(replica, primary_lsn, row["replayed"], row["age"], now, previous)
        was = replica.usable
        replica.lag_s = lag
        replica.usable = lag <= self.max_lag_s
        if replica.usable and replica.fell_back:
            replica.fell_back = False  # pooled connections may be the primary's: drop them
            await replica.engine.dispose()
        if was != replica.usable:
            log.warning(
                "replica %s %s (lag %.1f s)",
                _where(replica),
                "in use" if replica.usable else "lagging: reads go to the primary",
                lag,
            )

    def _fell_back(self, replica: Replica) -> None:
        replica.fell_back = True
        replica.usable = False

    def status(self) -> dict[str, str]:
        """``{replica: "ok (lag 0.0 s)" | "lagging …" | "down"}`` for /readyz."""
        out = {}
        for r in self.replicas:
            if r.lag_s is None:
                out[_where(r)] = "down"
            else:
                out[_where(r)] = f"{'ok' if r.usable else 'lagging'} (lag {r.lag_s:.1f} s)"
        return out

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        for r in self.replicas:
            if r._probe is not None:
                with contextlib.suppress(Exception):
                    await r._probe.close(timeout=2)
                r._probe = None
            await r.engine.dispose()


def _lag(
    replica: Replica,
    primary_lsn: int,
    replayed: int | None,
    last_commit_age: float | None,
    now: float,
    previous: float | None,
) -> float:
    """Seconds ``replica`` is behind: 0 when it replayed ``primary_lsn`` (or is no
    replica), else since the round before the one that first saw its oldest unreplayed
    WAL (at most one check too high, idle time not counted); on the first round, the
    age of its last replayed commit (an over-estimate)."""
    if replayed is None or replayed >= primary_lsn:
        replica._behind.clear()
        return 0.0
    if not replica._behind or replica._behind[-1][0] != primary_lsn:
        replica._behind.append((primary_lsn, previous))
    while replica._behind and replica._behind[0][0] <= replayed:
        replica._behind.popleft()
    since = replica._behind[0][1]
    if since is None:
        return float(last_commit_age or 0.0)
    return max(0.0, now - since)


def _marker(viewer: uuid.UUID) -> str:
    return f"roost:ryw:{{{viewer}}}"


def _where(replica: Replica) -> str:
    u = make_url(replica.url)
    return f"{u.host or u.query.get('host') or 'local'}:{u.port or 5432}/{u.database}"
