"""Shared fixtures: a fresh, migrated PostgreSQL database per test run, the app, and a
GraphQL client over real HTTP semantics (httpx ASGI transport).

DATABASE_URL names the *server* (any database on it); each run creates
``roost_test_<random>`` there, migrates it with Alembic and drops it at the end, so
concurrent runs never collide. ``make test`` sets DATABASE_URL/REDIS_URL, starting
embedded servers when they are not set.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import asyncpg
import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from app.asgi import create_app
from app.database import create_engine
from app.migrate import upgrade
from app.settings import Settings
from domain.db import new_id
from domain.identity.passwords import hash_password_sync
from domain.identity.tokens import issue_access_token
from schema.ids import to_global_id

TEST_PASSWORD = "correct horse battery staple"

# The feed store backends (one Redis, a Redis Cluster of the run's own): tests/stores.py.
pytest_plugins = ["tests.stores"]


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


@pytest.fixture(scope="session")
def database_url() -> str:
    """URL of this run's own database (created, migrated, dropped afterwards)."""
    yield from own_database()


@pytest.fixture(scope="session")
def settings(database_url: str) -> Settings:
    """Settings pointing at this run's database (and REDIS_URL from the environment)."""
    return Settings(
        DATABASE_URL=database_url,
        REDIS_URL=os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0",
        # Own job queue: concurrent runs on one Redis never take each other's jobs.
        ARQ_QUEUE=f"roost-test:{uuid.uuid4().hex[:12]}",
        WORKER_METRICS_PORT=0,
        # No metrics port of its own; /metrics on the app answers with this token.
        METRICS_PORT=0,
        METRICS_TOKEN="test-metrics-token-" + uuid.uuid4().hex,
        DB_POOL_SIZE=5,  # the worker's pool: the test server is shared (max_connections)
        DB_MAX_OVERFLOW=10,
        # Small thresholds and pages so tests exercise pull authors, flips and paging
        # with dozens of users rather than thousands.
        PULL_THRESHOLD=40,
        PUSH_BACK_THRESHOLD=30,
        FANOUT_BATCH_SIZE=7,
        # A small ranked window, so a dozen posts page through it and past it.
        FEED_RANKED_WINDOW=6,
        # A small follow cap so the daily digest shows with a handful of followers.
        NOTIFY_FOLLOW_DAILY_CAP=3,
        JWT_SECRET="test-secret-" + uuid.uuid4().hex,
        # The suite sends hundreds of requests a minute from one address: no rate limits
        # here (tests/e2e/test_http_guards.py builds apps with tiny ones).
        RATE_LIMIT_ENABLED=False,
    )


@pytest.fixture(scope="session")
async def engine(settings: Settings) -> AsyncIterator[AsyncEngine]:
    """An AsyncEngine on this run's database, with room for concurrency tests."""
    eng = create_engine(settings.database_url, pool_size=10, max_overflow=20)
    yield eng
    await eng.dispose()


@pytest.fixture(scope="session")
def app(settings: Settings, engine: AsyncEngine):
    """The ASGI app sharing the test engine."""
    return create_app(settings, engine=engine)


@pytest.fixture(scope="session")
async def client(app) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client talking to the app in-process (no socket)."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://roost.test") as c:
        yield c


@dataclass
class GQL:
    """Posts GraphQL documents; ``token`` adds ``Authorization: Bearer``."""

    client: httpx.AsyncClient

    async def __call__(
        self, query: str, variables: dict | None = None, *, token: str | None = None
    ) -> dict:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        resp = await self.client.post(
            "/graphql", json={"query": query, "variables": variables or {}}, headers=headers
        )
        assert resp.status_code in (200, 400, 401), resp.text
        return resp.json()


@pytest.fixture
def gql(client: httpx.AsyncClient) -> GQL:
    return GQL(client)


@dataclass(frozen=True)
class TestUser:
    id: uuid.UUID
    username: str
    token: str
    session_id: uuid.UUID | None = None  # the session (refresh-token family) of ``token``

    @property
    def gid(self) -> str:
        return to_global_id("User", self.id)


_PASSWORD_HASH: str | None = None


@pytest.fixture
def make_users(engine: AsyncEngine, settings: Settings):
    """``await make_users(n)`` inserts n active users in one statement (one shared argon2id
    hash of TEST_PASSWORD) and returns them with access tokens."""
    return user_maker(engine, settings)


def user_maker(engine: AsyncEngine, settings: Settings):
    """What the ``make_users`` fixture returns, for fixtures of a wider scope."""

    async def _make(n: int, prefix: str = "u", *, active: bool = True) -> list[TestUser]:
        global _PASSWORD_HASH
        _PASSWORD_HASH = _PASSWORD_HASH or hash_password_sync(TEST_PASSWORD)
        rows = []
        for _ in range(n):
            uid = new_id()
            rows.append(
                {
                    "id": uid,
                    "username": f"{prefix}{uid.hex[-16:]}",
                    "hash": _PASSWORD_HASH,
                    "active": active,
                }
            )
        for r in rows:
            r["sid"] = new_id()
            r["digest"] = os.urandom(32)
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO users (id, username, display_name, password_hash, last_active_at)"
                    " VALUES (:id, :username, :username, :hash,"
                    " CASE WHEN :active THEN now() END)"
                ),
                rows,
            )
            # A live session for each token (its refresh token is not handed out).
            await conn.execute(
                text(
                    "INSERT INTO sessions (id, user_id, token_hash, family_id, expires_at)"
                    " VALUES (:sid, :id, :digest, :sid, now() + interval '30 days')"
                ),
                rows,
            )
        cfg = settings.token_config
        return [
            TestUser(r["id"], r["username"], issue_access_token(cfg, r["id"], r["sid"]), r["sid"])
            for r in rows
        ]

    return _make


class WorkerControl:
    """A real arq worker running in this event loop, on this run's queue."""

    def __init__(self, settings: Settings, engine: AsyncEngine, *, relay: bool = True) -> None:
        self.settings = settings
        self.engine = engine
        self.relay = relay  # run the outbox relay (one worker per database is enough)
        self.worker = None
        self.task: asyncio.Task | None = None

    async def start(self) -> None:
        from arq.worker import Worker

        from workers.settings import worker_options

        if self.task is None:
            options = worker_options(self.settings, relay=self.relay)
            self.worker = Worker(**options, handle_signals=False)
            self.task = asyncio.create_task(self.worker.async_run())

    async def stop(self) -> None:
        if self.task is not None:
            task, worker = self.task, self.worker
            self.task = self.worker = None  # stopped even if close() fails: start() works
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            try:
                await worker.close()
            except asyncio.CancelledError:
                # arq's close() awaits the job tasks it was running, cancelled with the
                # worker; only a cancellation of this test's own task goes on.
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise

    async def drain(self, within: float = 20.0) -> None:
        """Wait until every outbox event has been consumed (fails after ``within`` s)."""
        deadline = asyncio.get_running_loop().time() + within
        while True:
            async with self.engine.connect() as conn:
                pending = await conn.scalar(
                    text("SELECT count(*) FROM outbox WHERE dispatched_at IS NULL")
                )
            if pending == 0:
                return
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"{pending} outbox events still pending after {within}s")
            await asyncio.sleep(0.05)


@pytest.fixture(scope="session")
async def worker(settings: Settings, engine: AsyncEngine) -> AsyncIterator[WorkerControl]:
    """The arq worker (started); tests may stop and restart it, and ``drain()`` it."""
    control = WorkerControl(settings, engine)
    await control.start()
    yield control
    await control.stop()
