"""A mutation that committed, then could not read its payload back because PostgreSQL
stopped in between, is answered PAYLOAD_UNAVAILABLE (HTTP 200, no Retry-After: the
change is saved, do not send it again), never the 503 that invites a second copy; an
Idempotency-Key stores that answer, and never stores a SERVICE_UNAVAILABLE.

PostgreSQL is the test's own (an embedded server in a temporary folder), stopped for
real (``pg_ctl stop``) right after the comment's transaction committed, before the
payload's first statement.
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import event, text

from app.asgi import create_app
from app.database import create_engine
from app.embedded import EmbeddedPostgres, ensure_database
from app.migrate import upgrade
from tests.support.actions import post
from tests.support.graphql import GQL
from tests.support.users import user_maker

COMMENT = """mutation($id: ID!, $body: String!) { addComment(input: { postId: $id, body: $body })
  { __typename ... on AddCommentSuccess { comment { id body author { username } } } } }"""


class StopAfterCommit:
    """Once armed, stops PostgreSQL before the first statement that follows the commit
    of a transaction which inserted a comment."""

    def __init__(self, pg: EmbeddedPostgres) -> None:
        self.pg = pg
        self.state = "idle"  # armed -> committed -> stopped

    def statement(self, conn, _cursor, statement: str, *_args) -> None:
        if self.state == "committed":
            self.state = "stopped"
            self.pg.stop()  # pg_ctl stop: the payload's statement meets no server
        elif self.state == "armed" and "INSERT INTO comments" in statement:
            conn.info["comment_written"] = True

    def commit(self, conn) -> None:
        if self.state == "armed" and conn.info.pop("comment_written", False):
            self.state = "committed"


@pytest.fixture(scope="module")
async def own_pg(settings) -> AsyncIterator[tuple]:
    with tempfile.TemporaryDirectory(prefix="roost-committed-") as folder:
        pg = EmbeddedPostgres(Path(folder) / "postgres")
        await asyncio.to_thread(pg.start)
        try:
            url = pg.url("roost")
            await ensure_database(url)
            await asyncio.to_thread(upgrade, url)
            own = settings.model_copy(
                update={
                    "database_url": url,
                    "db_connect_timeout_s": 1.0,
                    "db_pool_timeout_s": 2.0,
                    "gc_freeze": False,
                }
            )
            engine = create_engine(url, pool_size=3, max_overflow=2, connect_timeout_s=1.0)
            trap = StopAfterCommit(pg)
            event.listen(engine.sync_engine, "before_cursor_execute", trap.statement)
            event.listen(engine.sync_engine, "commit", trap.commit)
            app = create_app(own, engine=engine)
            async with (
                app.router.lifespan_context(app),
                httpx.AsyncClient(
                    transport=httpx.ASGITransport(app=app), base_url="http://roost.test"
                ) as client,
            ):
                yield pg, own, engine, client, trap
            await engine.dispose()
        finally:
            await asyncio.to_thread(pg.stop)


async def _restart(pg: EmbeddedPostgres, engine) -> None:
    await asyncio.to_thread(pg.start)
    await engine.dispose()  # the pooled connections died with the server


async def _comments(engine, body: str) -> int:
    async with engine.connect() as conn:
        return (
            await conn.execute(text("SELECT count(*) FROM comments WHERE body = :b"), {"b": body})
        ).scalar_one()


async def _send(client, token: str, pid: str, body: str, key: str | None = None):
    headers = {"Authorization": f"Bearer {token}"}
    if key is not None:
        headers["Idempotency-Key"] = key
    return await client.post(
        "/graphql", json={"query": COMMENT, "variables": {"id": pid, "body": body}}, headers=headers
    )


async def test_a_committed_comment_whose_payload_read_fails_is_not_a_503(own_pg) -> None:
    pg, own, engine, client, trap = own_pg
    author, fan = await user_maker(engine, own)(2)
    pid = await post(GQL(client), author, "read back")
    for key in (None, f"key-{uuid.uuid4().hex}"):
        body = f"once {uuid.uuid4().hex[:8]}"
        trap.state = "armed"
        resp = await _send(client, fan.token, pid, body, key)
        assert trap.state == "stopped"
        try:
            out = resp.json()
            assert resp.status_code == 200, (resp.status_code, out)
            assert "Retry-After" not in resp.headers
            codes = [e["extensions"]["code"] for e in out["errors"]]
            assert codes and set(codes) == {"PAYLOAD_UNAVAILABLE"}, out
            assert "saved" in out["errors"][0]["message"]
        finally:
            await _restart(pg, engine)
        assert await _comments(engine, body) == 1
        if key is not None:  # the retry a client makes anyway is the stored answer
            again = await _send(client, fan.token, pid, body, key)
            assert again.json() == out
            assert await _comments(engine, body) == 1


async def test_an_idempotency_key_never_stores_service_unavailable(own_pg) -> None:
    pg, own, engine, client, _ = own_pg
    author, fan = await user_maker(engine, own)(2)
    pid = await post(GQL(client), author, "while down")
    key, body = f"key-{uuid.uuid4().hex}", f"later {uuid.uuid4().hex[:8]}"
    # The fan's session is in the session cache (Redis): the mutation is admitted and
    # runs while PostgreSQL is down, and fails at its field.
    assert (await GQL(client)("{ viewer { username } }", token=fan.token))["data"]["viewer"]
    await asyncio.to_thread(pg.stop)
    try:
        down = await _send(client, fan.token, pid, body, key)
        assert down.status_code == 503, down.text
        (error,) = down.json()["errors"]
        assert error["extensions"]["code"] == "SERVICE_UNAVAILABLE"
        assert error["path"] == ["addComment"]
    finally:
        await _restart(pg, engine)
    back = await _send(client, fan.token, pid, body, key)
    assert back.status_code == 200, back.text
    assert back.json()["data"]["addComment"]["__typename"] == "AddCommentSuccess"
    assert await _comments(engine, body) == 1
