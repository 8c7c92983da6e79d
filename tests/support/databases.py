"""A database of the run's own on the test server: created, migrated, dropped after."""

from __future__ import annotations

import asyncio
import os
import uuid

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from app.migrate import upgrade


def _server_url() -> str:
    url = os.environ.get("DATABASE_URL")
    if not url:
        pytest.exit("DATABASE_URL is not set: run the suite with `make test`.", returncode=2)
    return url


def _asyncpg_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def own_database(suffix: str = ""):
    """Create ``roost_test_<random><suffix>`` on the server, migrate it, yield its URL,
    drop it afterwards (a generator for fixtures)."""
    server = make_url(_server_url())
    name = f"roost_test_{uuid.uuid4().hex[:12]}{suffix}"
    admin = _asyncpg_dsn(server.set(database="postgres").render_as_string(hide_password=False))

    async def _admin(sql: str) -> None:
        conn = await asyncpg.connect(admin)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    url = server.set(database=name).render_as_string(hide_password=False)
    try:
        upgrade(url)
        yield url
    finally:
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
