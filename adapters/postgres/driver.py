"""The asyncpg connection under an SQLAlchemy connection, for driver-level calls."""

from __future__ import annotations

import asyncpg
from sqlalchemy.ext.asyncio import AsyncConnection


async def asyncpg_connection(conn: AsyncConnection) -> asyncpg.Connection:
    """The asyncpg connection under ``conn``, for driver-level calls (``COPY``) that run
    inside the transaction open on ``conn``. Raises RuntimeError if ``conn`` has been
    invalidated (SQLAlchemy then holds no driver connection)."""
    raw = await conn.get_raw_connection()
    driver = raw.driver_connection
    if not isinstance(driver, asyncpg.Connection):
        raise RuntimeError(f"no asyncpg connection under this connection: {driver!r}")
    return driver
