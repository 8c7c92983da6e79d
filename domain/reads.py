"""Reads of one statement, and the :class:`RoundTrip` port that runs them on an engine
in one round trip, without a transaction (``adapters.postgres.fetch``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine


class RoundTrip(Protocol):
    """Runs one read-only statement (``$1``-style parameters) outside any transaction on
    a pooled connection of ``engine`` in one round trip; rows answer indexing and
    unpacking. Raises the driver's errors (a statement refused, the server gone)."""

    async def __call__(self, engine: AsyncEngine, sql: str, *args: Any) -> Sequence[Any]: ...


_round_trip: RoundTrip | None = None


def use_round_trip(round_trip: RoundTrip) -> None:
    """Install the :class:`RoundTrip` that :func:`fetch_rows` uses on an engine."""
    global _round_trip
    _round_trip = round_trip


async def fetch_rows(db: AsyncConnection | AsyncEngine, sql: str, *args: Any) -> Sequence[Any]:
    """Run one read statement (``$1`` parameters) on ``db``: an engine through the
    installed :class:`RoundTrip` (RuntimeError if none), a connection through SQLAlchemy.
    Rows answer indexing and unpacking, not attributes."""
    if isinstance(db, AsyncEngine):
        if _round_trip is None:
            raise RuntimeError("no RoundTrip installed: import app.database, which does")
        return await _round_trip(db, sql, *args)
    return (await db.exec_driver_sql(sql, args)).all()
