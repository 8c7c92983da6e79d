"""The async SQLAlchemy engine (asyncpg) built from a PostgreSQL URL."""

from __future__ import annotations

from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine


def async_url(url: str) -> str:
    """Return ``url`` with the ``postgresql+asyncpg`` driver (accepts postgres://, postgresql://)."""
    u = make_url(url.replace("postgres://", "postgresql://", 1))
    return u.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)


def create_engine(
    url: str,
    *,
    pool_size: int = 10,
    max_overflow: int = 20,
    connect_timeout_s: float = 5.0,
    pool_timeout_s: float = 10.0,
) -> AsyncEngine:
    """Return an AsyncEngine over asyncpg with UTC sessions.

    No pre-ping: with asyncpg it costs three round trips per checkout (BEGIN, ping,
    ROLLBACK), a third of a follow's. A connection broken by a server restart fails one
    statement, which invalidates the pool; connections are also recycled every 30 min.
    Connecting gives up after ``connect_timeout_s`` and waiting for a free pooled
    connection after ``pool_timeout_s``, so a server that is down fails requests fast.
    """
    return create_async_engine(
        async_url(url),
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_recycle=1800,
        pool_timeout=pool_timeout_s,
        connect_args={
            "server_settings": {"timezone": "UTC", "application_name": "roost"},
            "timeout": connect_timeout_s,
        },
    )
