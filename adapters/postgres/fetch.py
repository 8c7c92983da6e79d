""":class:`domain.reads.RoundTrip`: one read statement on asyncpg over a connection of
the engine's pool, one round trip instead of SQLAlchemy's three (BEGIN, statement,
ROLLBACK). Statements are reported to ``before_cursor_execute`` listeners (``conn`` a
:class:`Borrowed`, ``cursor`` and ``context`` None)."""

from __future__ import annotations

from typing import Any

import asyncpg
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util import greenlet_spawn

#: SQLSTATEs after which a connection is not reused (08; 57P01-3 shutdown, no connect).
_BROKEN = ("08", "57P01", "57P02", "57P03")


class Borrowed:
    """The listeners' ``conn``: ``connection`` the pooled one, ``engine`` the engine."""

    __slots__ = ("connection", "engine")

    def __init__(self, connection: Any, engine: Any) -> None:
        self.connection = connection
        self.engine = engine


async def fetch(engine: AsyncEngine, sql: str, *args: Any) -> list[asyncpg.Record]:
    """Run one read-only statement (``$1`` parameters) outside a transaction; return
    its rows. A stale pooled connection is dropped and the read retried once.

    Raises asyncpg's errors (PostgresError, InterfaceError, OSError) or the pool's
    TimeoutError. A broken or cancelled connection is dropped, not pooled again.
    """
    sync_engine = engine.sync_engine
    for attempt in (1, 2):
        fairy = await greenlet_spawn(sync_engine.raw_connection)
        try:
            if sync_engine._has_events:
                borrowed = Borrowed(fairy, sync_engine)
                for listener in sync_engine.dispatch.before_cursor_execute:
                    listener(borrowed, None, sql, args, None, False)
            driver = fairy.driver_connection
            if driver is None:  # invalidated: SQLAlchemy holds no driver connection
                raise RuntimeError("no asyncpg connection under this pooled connection")
            rows: list[asyncpg.Record] = await driver.fetch(sql, *args)
        except BaseException as exc:
            if _survived(fairy, exc):
                await _give_back(sync_engine.pool, fairy)
            elif isinstance(exc, Exception):  # the server or the socket is gone
                sync_engine.pool._invalidate(fairy, exc)  # as SQLAlchemy does on a disconnect
                if attempt == 1 and _lost(exc):
                    continue  # a stale pooled connection: once more on a fresh one
            else:  # cancelled mid-statement: this connection's protocol state is unknown
                fairy.invalidate(exc)
            raise
        await _give_back(sync_engine.pool, fairy)
        return rows
    raise AssertionError("unreachable: the second attempt returns or raises")


def _lost(exc: Exception) -> bool:
    """Whether ``exc`` says the pooled connection was lost (the one retried failure)."""
    if isinstance(exc, TimeoutError):  # an OSError, but a slow statement: never twice
        return False
    if isinstance(exc, asyncpg.InternalClientError | asyncpg.InterfaceError | OSError):
        return True
    code = getattr(exc, "sqlstate", None) or ""
    return isinstance(exc, asyncpg.PostgresError) and code.startswith(_BROKEN)


async def _give_back(pool: Any, fairy: Any) -> None:
    """Return ``fairy`` to ``pool``; without a greenlet while the pool has room (no I/O
    then: no transaction to roll back)."""
    size, checkedin = getattr(pool, "size", None), getattr(pool, "checkedin", None)
    if size is not None and checkedin is not None and checkedin() < size():
        fairy.close()
    else:
        await greenlet_spawn(fairy.close)


def _survived(fairy: Any, exc: BaseException) -> bool:
    """Whether the connection is still usable: a refused statement on an open one.
    An InternalClientError means a backend terminated while pooled (raised before the
    socket is seen closed)."""
    if not isinstance(exc, Exception) or isinstance(
        exc, OSError | TimeoutError | asyncpg.InterfaceError | asyncpg.InternalClientError
    ):
        return False
    code = getattr(exc, "sqlstate", None) or ""
    driver = fairy.driver_connection
    return not code.startswith(_BROKEN) and driver is not None and not driver.is_closed()
