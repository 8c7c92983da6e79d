"""One-statement reads, and the :class:`RoundTrip` port running them on an engine
(``adapters.postgres.fetch``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine


class RoundTrip(Protocol):
    """Runs a read-only ``$1``-style statement outside a transaction, one round trip."""

    async def __call__(self, engine: AsyncEngine, sql: str, *args: Any) -> Sequence[Any]: ...


_round_trip: RoundTrip | None = None


def use_round_trip(round_trip: RoundTrip) -> None:
    """Install the :class:`RoundTrip` that :func:`fetch_rows` uses on an engine."""
    global _round_trip
    _round_trip = round_trip


async def fetch_rows(db: AsyncConnection | AsyncEngine, sql: str, *args: Any) -> Sequence[Any]:
    """Run a read statement on ``db``: an engine via the :class:`RoundTrip` (RuntimeError if none),
    a connection via SQLAlchemy; rows index and unpack."""
    if isinstance(db, AsyncEngine):
        if _round_trip is None:
            raise RuntimeError("no RoundTrip installed: import app.database, which does")
        return await _round_trip(db, sql, *args)
    return (await db.exec_driver_sql(sql, args)).all()
