"""``roost backup`` / ``roost restore`` (app/backup.py): a backup restored into a fresh
database serves the same home feed, from a Redis that never saw it (feeds rebuilt from
PostgreSQL on read); a restore into a database that holds tables is refused."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.asgi import create_app
from app.database import create_engine
from app.embedded import redis_server_binary
from app.embedded.redis import _ping
from tests.support.documents import FOLLOW
from tests.support.polling import PATIENCE_S
from tests.support.servers import free_port, throwaway_database
from tests.support.users import user_maker

ROOST = str(Path(sys.executable).with_name("roost"))
CREATE = """mutation($c: String!) { createPost(input: { caption: $c }) {
  __typename ... on CreatePostSuccess { post { id } } } }"""
FEED = "{ viewer { feed(first: 20) { edges { node { id caption author { username } } } } } }"


@contextlib.contextmanager
def own_redis(folder: Path) -> Iterator[str]:
    """A redis-server of this test (no persistence); yields its base URL (no db)."""
    port = free_port()
    args = ["--bind", "127.0.0.1", "--port", str(port), "--dir", str(folder)]
    proc = subprocess.Popen(
        [str(redis_server_binary()), *args, "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + PATIENCE_S
        while not _ping(f"redis://127.0.0.1:{port}/0", timeout=0.2):
            assert time.monotonic() < deadline and proc.poll() is None, "redis did not start"
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(15)


def roost(*args: str, database_url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATABASE_URL": database_url}
    return subprocess.run(
        [ROOST, *args], env=env, capture_output=True, text=True, timeout=4 * PATIENCE_S
    )


@contextlib.asynccontextmanager
async def api(settings, database_url: str, redis_url: str):
    own = settings.model_copy(update={"database_url": database_url, "redis_url": redis_url})
    engine = create_engine(database_url, pool_size=2, max_overflow=2)
    app = create_app(own, engine=engine)
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://roost.test") as c:
            yield c, engine
    finally:
        await engine.dispose()


async def gql(client: httpx.AsyncClient, query: str, token: str, **variables) -> dict:
    resp = await client.post(
        "/graphql",
        json={"query": query, "variables": variables},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert "errors" not in body, body
    return body["data"]


@pytest.fixture
def databases(tmp_path):
    """(a migrated database, an empty one, a redis-server's URL) of this test."""
    with (
        own_redis(tmp_path) as redis,
        throwaway_database() as source,
        throwaway_database(migrate=False) as target,
    ):
        yield source, target, redis


async def test_a_restored_backup_serves_the_same_feed(settings, tmp_path, databases):
    source, target, redis = databases
    async with api(settings, source, f"{redis}/1") as (client, engine):
        author, other, reader = await user_maker(engine, settings)(3, "bk")
        for followee in (author, other):
            await gql(client, FOLLOW, reader.token, id=followee.gid)
        for i in range(3):
            await gql(client, CREATE, author.token, c=f"from the author {i}")
        await gql(client, CREATE, other.token, c="from the other")
        before = await gql(client, FEED, reader.token)
    assert len(before["viewer"]["feed"]["edges"]) == 4, before

    dump = tmp_path / "roost.dump"
    made = await asyncio.to_thread(roost, "backup", str(dump), database_url=source)
    assert made.returncode == 0, made.stderr
    assert dump.stat().st_size > 0 and "backed up the database" in made.stdout
    restored = await asyncio.to_thread(roost, "restore", str(dump), database_url=target)
    assert restored.returncode == 0, restored.stderr

    # A Redis that never saw this data: the feed is rebuilt from the restored rows.
    async with api(settings, target, f"{redis}/2") as (client, _):
        after = await gql(client, FEED, reader.token)
    assert after == before

    again = await asyncio.to_thread(roost, "restore", str(dump), database_url=target)
    assert again.returncode == 1 and "already holds" in again.stderr, again
