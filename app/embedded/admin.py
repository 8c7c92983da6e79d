"""SQL that needs no application database: create or drop one, tune the server."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from app.database import async_url
from app.embedded.processes import log

MAINTENANCE_DATABASE = "postgres"


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sqlstate(exc: BaseException) -> str | None:
    """Return the SQLSTATE of an asyncpg error however SQLAlchemy wrapped it."""
    seen: BaseException | None = exc
    while seen is not None:
        for candidate in (seen, getattr(seen, "orig", None)):
            code = getattr(candidate, "sqlstate", None)
            if isinstance(code, str):
                return code
        seen = seen.__cause__ or seen.__context__
    return None


async def _admin_execute(url: str, *statements: str) -> None:
    """Run ``statements`` in order on one AUTOCOMMIT connection to ``url``."""
    engine = create_async_engine(async_url(url), poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            for sql in statements:
                await conn.execute(text(sql))
    finally:
        await engine.dispose()


def _maintenance_url(u: URL) -> str:
    """``u`` pointed at the ``postgres`` maintenance database of the same server."""
    return u.set(database=MAINTENANCE_DATABASE).render_as_string(hide_password=False)


async def ensure_database(url: str) -> bool:
    """Create the database ``url`` names unless it exists (a concurrent creation counts
    as existing); True if created. Other connection errors propagate."""
    u = make_url(async_url(url))
    name = u.database
    if not name:
        raise ValueError(f"no database name in {u.render_as_string()}")
    try:
        await _admin_execute(url, "SELECT 1")
        return False
    except DBAPIError as exc:
        if _sqlstate(exc) != "3D000":
            raise
    except Exception as exc:  # asyncpg may raise before SQLAlchemy wraps it
        if _sqlstate(exc) != "3D000":
            raise
    maintenance = _maintenance_url(u)
    try:
        await _admin_execute(maintenance, f"CREATE DATABASE {_quote_ident(name)}")
    except DBAPIError as exc:
        if _sqlstate(exc) == "42P04":  # duplicate_database: someone else was quicker
            return False
        raise
    log.info("created database %s", name)
    return True


async def drop_database(url: str) -> None:
    """Drop the database ``url`` names if it exists, its sessions cut (``WITH (FORCE)``);
    ValueError for ``postgres`` and the templates."""
    u = make_url(async_url(url))
    if not u.database or u.database in (MAINTENANCE_DATABASE, "template0", "template1"):
        raise ValueError(f"refusing to drop database {u.database!r}")
    maintenance = _maintenance_url(u)
    await _admin_execute(
        maintenance, f"DROP DATABASE IF EXISTS {_quote_ident(u.database)} WITH (FORCE)"
    )


async def _tune_for_tests(url: str) -> None:
    """Trade durability for speed on a throw-away server (reloadable without a restart)."""
    await _admin_execute(
        url,
        "ALTER SYSTEM SET fsync = off",
        "ALTER SYSTEM SET full_page_writes = off",
        "ALTER SYSTEM SET synchronous_commit = off",
        "SELECT pg_reload_conf()",
    )
