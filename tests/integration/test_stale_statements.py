"""A column type changed under warm connections (a rolling migration's
``ALTER TABLE posts ALTER COLUMN caption TYPE varchar(10000)``) fails no request: every
statement whose cached plan went stale runs again on a fresh one where that is safe
(adapters/postgres/stale_statements.py), on a database of the test's own with the app's
real engine and pool.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest
from sqlalchemy import text

from adapters.postgres.stale_statements import is_plain_read
from app.asgi import create_app
from app.database import asyncpg_dsn, create_engine
from tests.support.databases import own_database
from tests.support.documents import COMMENT, CREATE, LIKE
from tests.support.graphql import GQL
from tests.support.users import user_maker

POSTS = """query($u: String!) { user(username: $u) { posts(first: 5) { edges { node {
  id caption likeCount } } } } }"""
POOL = 4


@pytest.fixture(scope="module")
def ddl_database_url():
    yield from own_database("_ddl")


@pytest.fixture(scope="module")
async def ddl_env(ddl_database_url, settings) -> AsyncIterator[tuple]:
    own = settings.model_copy(update={"database_url": ddl_database_url, "gc_freeze": False})
    engine = create_engine(own.database_url, pool_size=POOL, max_overflow=0)
    app = create_app(own, engine=engine)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client,
    ):
        yield own, engine, GQL(client)
    await engine.dispose()


async def _round(gql: GQL, users, n: int) -> list[dict]:
    """``n`` concurrent requests per user: a post, a like and a comment on it, a read."""

    async def one(u, i: int) -> list[dict]:
        out = [await gql(CREATE, {"c": f"round {i}"}, token=u.token)]
        created = (out[0].get("data") or {}).get("createPost") or {}
        pid = (created.get("post") or {}).get("id")
        if pid is not None:
            out.append(await gql(LIKE, {"id": pid}, token=u.token))
            out.append(await gql(COMMENT, {"id": pid, "body": "hi"}, token=u.token))
        out.append(await gql(POSTS, {"u": u.username}, token=u.token))
        return out

    rounds = await asyncio.gather(*(one(u, i) for u in users for i in range(n)))
    return [r for each in rounds for r in each]


async def test_a_column_type_change_under_load_fails_no_request(ddl_env) -> None:
    own, engine, gql = ddl_env
    users = await user_maker(engine, own)(POOL * 2)
    # Warm: every pooled connection has prepared the statements of each request.
    for _ in range(3):
        warm = await _round(gql, users, 1)
        assert all("errors" not in r for r in warm), [r for r in warm if "errors" in r]

    ddl = await asyncpg.connect(asyncpg_dsn(own.database_url))
    try:
        load = asyncio.create_task(_round(gql, users, 2))
        await ddl.execute("ALTER TABLE posts ALTER COLUMN caption TYPE varchar(10000)")
        during = await load
        after = await _round(gql, users, 2)
        await ddl.execute("ALTER TABLE posts ALTER COLUMN caption TYPE text")
        again = await _round(gql, users, 1)
    finally:
        await ddl.close()
    failed = [r for r in during + after + again if "errors" in r]
    assert failed == []
    created = [r["data"]["createPost"] for r in after if "createPost" in (r.get("data") or {})]
    assert [c["__typename"] for c in created] == ["CreatePostSuccess"] * len(users) * 2
    async with engine.connect() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM posts"))).scalar() == len(users) * 8


def test_what_counts_as_a_plain_read() -> None:
    assert is_plain_read("SELECT id FROM posts WHERE id = $1")
    assert is_plain_read("  with x AS (SELECT 1) SELECT * FROM x")
    assert not is_plain_read("SELECT id FROM posts WHERE id = $1 FOR UPDATE")
    assert not is_plain_read("SELECT id FROM follows FOR NO KEY UPDATE")
    assert not is_plain_read("SELECT 1 FROM posts FOR KEY SHARE")
    assert not is_plain_read("SELECT pg_advisory_xact_lock($1)")
    assert not is_plain_read("WITH d AS (DELETE FROM likes RETURNING 1) SELECT count(*) FROM d")
    assert not is_plain_read("INSERT INTO posts (id) VALUES ($1)")
    assert is_plain_read("SELECT deleted_at, updated_at FROM posts")
