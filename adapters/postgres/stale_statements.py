"""A statement refused for a stale cached plan (``InvalidCachedStatementError``, after
DDL) is prepared again and rerun when the caller cannot tell: outside a transaction, as
its first statement, or in a READ COMMITTED one that has only read (rolled back and
begun again: a new snapshot, as READ COMMITTED gives each statement anyway). Otherwise
the error is raised; the dialect drops its plans, so the next transaction succeeds.
"""

from __future__ import annotations

import functools
import re
import time
import weakref
from typing import Any

import asyncpg
from sqlalchemy import event
from sqlalchemy.dialects.postgresql.asyncpg import (
    AsyncAdapt_asyncpg_connection,
    AsyncAdapt_asyncpg_cursor,
    AsyncAdapt_asyncpg_ss_cursor,
)
from sqlalchemy.ext.asyncio import AsyncEngine

_READ = re.compile(r"^\s*(?:SELECT|WITH|VALUES|SHOW|TABLE)\b", re.I)
_NOT_ONLY_READ = re.compile(
    r"\b(?:INSERT|UPDATE|DELETE|MERGE|SHARE|pg_advisory\w*|nextval|setval|set_config)\b", re.I
)

#: Per asyncpg connection: its last statement's transaction, and whether that wrote.
_state: weakref.WeakKeyDictionary[Any, tuple[object, bool]] = weakref.WeakKeyDictionary()


@functools.lru_cache(maxsize=2048)  # statements repeat: one scan per distinct text
def is_plain_read(sql: str) -> bool:
    """Whether ``sql`` only reads: no data change, row lock, advisory lock or sequence."""
    return bool(_READ.match(sql)) and not _NOT_ONLY_READ.search(sql)


def _stale(exc: BaseException) -> bool:
    cause = exc if isinstance(exc, asyncpg.InvalidCachedStatementError) else exc.__cause__
    return isinstance(cause, asyncpg.InvalidCachedStatementError)


class _Retrying:
    """The module's retry, mixed into asyncpg's cursors."""

    __slots__ = ()

    async def _prepare_and_execute(self, operation: str, parameters: Any) -> None:
        adapt = self._adapt_connection  # type: ignore[attr-defined]
        began = adapt._transaction is None
        try:
            await super()._prepare_and_execute(operation, parameters)  # type: ignore[misc]
        except Exception as exc:
            if not _stale(exc) or not _may_run_again(adapt, began):
                raise
            transaction, adapt._transaction = adapt._transaction, None
            if transaction is not None:
                await transaction.rollback()
            # Newer than every cached plan: prepared again, types reloaded.
            setattr(self, "_invalidate_schema_cache_asof", time.time())  # noqa: B010
            await super()._prepare_and_execute(operation, parameters)  # type: ignore[misc]
        _note(adapt, operation)


def _may_run_again(adapt: Any, began: bool) -> bool:
    transaction = adapt._transaction
    if began or transaction is None:
        return True
    seen = _state.get(adapt._connection)
    if seen is None or seen[0] is not transaction:  # nothing ran in it before this one
        return True
    wrote = seen[1]
    return not wrote and adapt.isolation_level in (None, "read_committed")


def _note(adapt: Any, operation: str) -> None:
    transaction = adapt._transaction
    if transaction is None:  # autocommit: nothing to remember
        return
    seen = _state.get(adapt._connection)
    wrote = seen is not None and seen[0] is transaction and seen[1]
    _state[adapt._connection] = (transaction, wrote or not is_plain_read(operation))


class _Cursor(_Retrying, AsyncAdapt_asyncpg_cursor):
    __slots__ = ()


class _ServerSideCursor(_Retrying, AsyncAdapt_asyncpg_ss_cursor):
    __slots__ = ()


class _Connection(AsyncAdapt_asyncpg_connection):
    __slots__ = ()
    _cursor_cls = _Cursor
    _ss_cursor_cls = _ServerSideCursor


def _adopt(dbapi_connection: Any, _record: Any) -> None:
    if type(dbapi_connection) is AsyncAdapt_asyncpg_connection:
        dbapi_connection.__class__ = _Connection


def install(engine: AsyncEngine) -> AsyncEngine:
    """Give every connection ``engine`` opens from now on the retry; return it."""
    event.listen(engine.sync_engine, "connect", _adopt)
    return engine
