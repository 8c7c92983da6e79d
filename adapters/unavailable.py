"""Which failures mean a dependency is down, not a bug: the API answers ``SERVICE_UNAVAILABLE``
(503, ``Retry-After``), the worker retries without dead-lettering."""

from __future__ import annotations

import asyncpg
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from domain.mail.ports import MailUnavailableError

#: SQLSTATEs (besides class 08) of a server shutting down, starting or full.
_UNAVAILABLE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300"})

POSTGRES = "postgres"
REDIS = "redis"
SMTP = "smtp"


def unavailable_dependency(exc: BaseException) -> str | None:
    """``"postgres"``, ``"redis"`` or ``"smtp"`` when ``exc`` or what it wraps says that
    server is down; None otherwise."""
    seen: set[int] = set()
    stack: list[BaseException | None] = [exc]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, RedisConnectionError | RedisTimeoutError):
            return REDIS
        if isinstance(e, MailUnavailableError):
            return SMTP
        if isinstance(e, PoolTimeoutError):
            return POSTGRES  # every pooled connection busy for pool_timeout seconds
        if isinstance(e, DBAPIError):
            if e.connection_invalidated:
                return POSTGRES
            stack.append(e.orig)
        code = getattr(e, "sqlstate", None)
        if isinstance(code, str) and (code.startswith("08") or code in _UNAVAILABLE_SQLSTATES):
            return POSTGRES
        if type(e).__module__.startswith("asyncpg") and "closed" in str(e):
            return POSTGRES  # InterfaceError: the connection was closed under us
        if isinstance(e, asyncpg.InternalClientError):
            return POSTGRES  # a protocol left mid-state by a backend that went away
        if isinstance(e, OSError | TimeoutError) and _raised_in_asyncpg(e):
            # Refused, reset, no such socket, timed out: asyncpg raises these as they
            # are while connecting to PostgreSQL (SQLAlchemy does not wrap them).
            return POSTGRES
        stack.extend((e.__cause__, e.__context__))
    return None


def _raised_in_asyncpg(exc: BaseException) -> bool:
    """Whether ``exc`` was raised from inside asyncpg (walks its traceback)."""
    tb = exc.__traceback__
    while tb is not None:
        if str(tb.tb_frame.f_globals.get("__name__", "")).startswith("asyncpg"):
            return True
        tb = tb.tb_next
    return False
