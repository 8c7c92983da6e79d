"""Whether this task's operation committed a write (a client told "retry" after one
would repeat it). SQLAlchemy runs listeners in the calling task's context, so each
record is its operation's own."""

from __future__ import annotations

import contextvars
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.postgres.stale_statements import is_plain_read


class Commits:
    """What one operation committed: ``wrote`` once a transaction with a write committed."""

    __slots__ = ("wrote",)

    def __init__(self) -> None:
        self.wrote = False


_CURRENT: contextvars.ContextVar[Commits | None] = contextvars.ContextVar(
    "roost_commits", default=None
)
_WROTE = "roost_wrote"


def watch() -> Commits:
    """A fresh record for the operation running in this task (replacing any earlier)."""
    record = Commits()
    _CURRENT.set(record)
    return record


def unwatch() -> None:
    """No record for this task: what runs next (a query) notes nothing."""
    _CURRENT.set(None)


def current() -> Commits | None:
    """The record :func:`watch` started in this task, if any."""
    return _CURRENT.get()


def _statement(conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
    if _CURRENT.get() is not None and not is_plain_read(statement):
        info = getattr(conn, "info", None)  # adapters.postgres.fetch's reads pass no Connection
        if info is not None:
            info[_WROTE] = True


def _commit(conn: Any) -> None:
    if not conn.invalidated and conn.info.pop(_WROTE, False):
        record = _CURRENT.get()
        if record is not None:
            record.wrote = True


def _rollback(conn: Any) -> None:
    if not conn.invalidated:  # an invalidated one's info is gone with its connection
        conn.info.pop(_WROTE, None)


def track(engine: AsyncEngine) -> AsyncEngine:
    """Note the committed writes of ``engine``'s transactions in the current record."""
    sync = engine.sync_engine
    event.listen(sync, "before_cursor_execute", _statement)
    event.listen(sync, "commit", _commit)
    event.listen(sync, "rollback", _rollback)
    return engine
