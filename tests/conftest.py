"""Shared fixtures: a fresh, migrated PostgreSQL database per test run, the app, and a
GraphQL client over real HTTP semantics (httpx ASGI transport).

DATABASE_URL names the *server* (any database on it); each run creates
``roost_test_<random>`` there, migrates it with Alembic and drops it at the end, so
concurrent runs never collide. ``make test`` sets DATABASE_URL/REDIS_URL, starting
embedded servers when they are not set.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from app.asgi import create_app
from app.database import create_engine
from app.settings import Settings
from tests.support.databases import own_database
from tests.support.graphql import GQL
from tests.support.smtp import Mailbox, smtp_server
from tests.support.users import user_maker
from tests.support.worker import WorkerControl

# The feed store backends (one Redis, a Redis Cluster of the run's own): tests/support/stores.py.
pytest_plugins = ["tests.support.stores"]


@pytest.fixture(scope="session")
def database_url() -> str:
    """URL of this run's own database (created, migrated, dropped afterwards)."""
    yield from own_database()


@pytest.fixture(scope="session")
def smtp() -> Iterator[tuple[str, Mailbox]]:
    """The run's SMTP server (aiosmtpd, in-process): its SMTP_URL and what it received."""
    with smtp_server() as served:
        yield served


@pytest.fixture
def mailbox(smtp: tuple[str, Mailbox]) -> Mailbox:
    """What the run's SMTP server received (the worker sends every mail there)."""
    return smtp[1]


@pytest.fixture(scope="session")
def settings(
    database_url: str, tmp_path_factory: pytest.TempPathFactory, smtp: tuple[str, Mailbox]
) -> Settings:
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
        # Own trending posts: concurrent runs on one Redis never meet each other's.
        EXPLORE_TRENDING_KEY=f"trend-test-{uuid.uuid4().hex[:12]}",
        # ... and explore ranks the whole pool: the run's tests share it.
        EXPLORE_WINDOW=1000,
        # A small follow cap so the daily digest shows with a handful of followers.
        NOTIFY_FOLLOW_DAILY_CAP=3,
        JWT_SECRET="test-secret-" + uuid.uuid4().hex,
        # The suite sends hundreds of requests a minute from one address: no rate limits
        # here (tests/e2e/test_http_guards.py builds apps with tiny ones).
        RATE_LIMIT_ENABLED=False,
        # The local object store of the run: uploads and published media (adapters/storage).
        MEDIA_DIR=tmp_path_factory.mktemp("media"),
        # The external media hosts some feed tests post URLs of (none by default).
        MEDIA_URL_ALLOWED_HOSTS="cdn.example.org,example.com",
        # The worker mails the run's in-process SMTP server.
        SMTP_URL=smtp[0],
        MAIL_FROM="Roost Tests <roost@tests.example>",
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


@pytest.fixture
def gql(client: httpx.AsyncClient) -> GQL:
    return GQL(client)


@pytest.fixture
def make_users(engine: AsyncEngine, settings: Settings):
    """``await make_users(n)`` inserts n active users in one statement (one shared argon2id
    hash of TEST_PASSWORD) and returns them with access tokens."""
    return user_maker(engine, settings)


@pytest.fixture(scope="session")
async def worker(settings: Settings, engine: AsyncEngine) -> AsyncIterator[WorkerControl]:
    """The arq worker (started); tests may stop and restart it, and ``drain()`` it."""
    control = WorkerControl(settings, engine)
    await control.start()
    yield control
    await control.stop()
