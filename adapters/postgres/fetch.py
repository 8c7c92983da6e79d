"""Single read statements run directly on asyncpg, over a connection borrowed from the
engine's pool (docs/design.md "GraphQL API conventions": a page costs a constant, small
number of round trips): domain's :class:`domain.reads.RoundTrip`, installed by
app/database.py.

A read through an SQLAlchemy ``AsyncConnection`` costs three round trips (``BEGIN``,
the statement, ``ROLLBACK``) and the Core's compile and result processing; one
statement alone needs no transaction (it sees one snapshot), so a request's reads (the
dataloaders' batches, the home feed's pull authors and hydration) run here instead:
one round trip each (asyncpg keeps the statement prepared per connection), rows as
``asyncpg.Record``. The connection comes from, and goes back to, the same pool, so
replica routing (the engine is whichever ``ReadRouting`` picked), pool limits and
pre-pings are the engine's own. Each statement is reported to the engine's
``before_cursor_execute`` listeners as SQLAlchemy reports its own (``conn`` is a
:class:`Borrowed`, ``cursor`` and ``context`` are None), so statement counts include
them.
"""

from __future__ import annotations

from typing import Any

import asyncpg
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util import greenlet_spawn

#: SQLSTATE classes and codes after which the connection is not to be used again
#: (connection exception; admin or crash shutdown; cannot connect now).
_BROKEN = ("08", "57P01", "57P02", "57P03")


class Borrowed:
    """What ``before_cursor_execute`` listeners get as ``conn`` for a statement run here:
    like SQLAlchemy's Connection, its ``connection`` is the pooled connection (with
    ``driver_connection``, the asyncpg one) and ``engine`` the engine."""

    __slots__ = ("connection", "engine")

    def __init__(self, connection: Any, engine: Any) -> None:
        self.connection = connection
        self.engine = engine


async def fetch(engine: AsyncEngine, sql: str, *args: Any) -> list[asyncpg.Record]:
    """Run one read-only statement (``$1``-style parameters) outside any transaction on a
    pooled connection of ``engine``; return its rows.

    A pooled connection found lost when the statement is sent (its backend terminated
    while it sat in the pool: a restart, a failover, ``pg_terminate_backend``) is
    dropped and the statement runs once more on a fresh connection: a read is safe to
    repeat, and a stale connection is no reason to fail a request. Otherwise raises
    what asyncpg raises (``asyncpg.PostgresError`` for a statement the server refuses,
    OSError or ``asyncpg.InterfaceError`` when the server is gone: see
    ``adapters.unavailable``) or SQLAlchemy's pool TimeoutError when no connection frees
    up in time. A connection that fails other than by a refused statement, or whose
    call is cancelled, is dropped rather than pooled again; a lost connection also
    makes the pool recycle its other connections, as SQLAlchemy does on a disconnect
    (:func:`_survived` tells them apart).
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
    """Whether ``exc``, raised by a statement on a pooled connection, says that
    connection was lost (its backend gone, its socket closed or reset, its protocol left
    mid-state by a goodbye read while it sat in the pool): the one failure after which
    :func:`fetch` tries again, on a new connection."""
    if isinstance(exc, TimeoutError):  # an OSError, but a slow statement: never twice
        return False
    if isinstance(exc, asyncpg.InternalClientError | asyncpg.InterfaceError | OSError):
        return True
    code = getattr(exc, "sqlstate", None) or ""
    return isinstance(exc, asyncpg.PostgresError) and code.startswith(_BROKEN)


async def _give_back(pool: Any, fairy: Any) -> None:
    """Return ``fairy`` to ``pool``. No transaction was begun, so its reset (a rollback)
    sends nothing; while the pool has room for it (a QueuePool below its size),
    putting it back does no I/O either and needs no greenlet (a spawn costs about as
    much as asyncpg's own work for a small statement). A full pool closes it instead,
    which does."""
    size, checkedin = getattr(pool, "size", None), getattr(pool, "checkedin", None)
    if size is not None and checkedin is not None and checkedin() < size():
        fairy.close()
    else:
        await greenlet_spawn(fairy.close)


def _survived(fairy: Any, exc: BaseException) -> bool:
    """Whether the connection is still fine after ``exc``: the server refused the
    statement (or asyncpg an argument, or a listener failed) and the connection is
    open; not after a cancellation, a socket error, an asyncpg interface error or an
    asyncpg internal error (a backend that was terminated while the connection sat in
    the pool leaves its protocol mid-state: "cannot switch to state …", raised before
    the socket is seen closed)."""
    if not isinstance(exc, Exception) or isinstance(
        exc, OSError | TimeoutError | asyncpg.InterfaceError | asyncpg.InternalClientError
    ):
        return False
    code = getattr(exc, "sqlstate", None) or ""
    driver = fairy.driver_connection
    return not code.startswith(_BROKEN) and driver is not None and not driver.is_closed()
