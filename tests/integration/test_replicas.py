"""Reads from a PostgreSQL streaming replica (app/database.py ReadRouting,
schema/read_routing.py), on a primary and a replica of the test's own
(app/embedded/replica.py: initdb + pg_basebackup -R on loopback ports; the shared
server's configuration is never touched).

Every statement the app sends is recorded with the port of the server that ran it, so
the tests see where each read went: queries on the replica, mutations (and what they
read back) on the primary, a writer's next reads on the primary, nothing written to the
replica, and pages served by the primary while the replica is stopped.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import httpx
import pytest
from sqlalchemy import event, text

from app.asgi import create_app
from app.database import ReadRouting, create_engine
from app.embedded.replica import EmbeddedReplicaSet
from app.migrate import upgrade
from tests.support.actions import follow_all, post
from tests.support.documents import COUNTS, FEED, FOLLOW, LOG_IN
from tests.support.graphql import GQL
from tests.support.users import TEST_PASSWORD, user_maker
from tests.support.worker import WorkerControl

PROFILE = """query($u: String!) { user(username: $u) { username followerCount followingCount
  followers(first: 10) { edges { node { username } } }
  posts(first: 10) { edges { node { caption likeCount } } } } }"""
VIEWER = "{ viewer { username followingCount } }"
LIKE = """mutation($id: ID!) { likePost(input: { postId: $id }) { __typename } }"""
COMMENT = """mutation($id: ID!) { addComment(input: { postId: $id, body: "nice" }) {
  __typename } }"""
_WRITE = re.compile(r"^\s*(INSERT|UPDATE|DELETE|MERGE|CREATE|ALTER|DROP|TRUNCATE|LOCK)\b", re.I)


@pytest.fixture(scope="module")
def pg_pair():
    """A primary and one streaming replica on loopback (about 3-5 s to start)."""
    with tempfile.TemporaryDirectory(prefix="roost-replica-") as tmp:
        pair = EmbeddedReplicaSet(Path(tmp) / "pg")
        pair.start()
        try:
            yield pair
        finally:
            pair.stop()


class Statements:
    """Every statement of the app, with the port of the server it ran on."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, str]] = []

    def __call__(self, conn, cursor, statement, *args) -> None:
        addr = getattr(conn.connection.driver_connection, "_addr", None)
        self.seen.append((addr[1] if addr else -1, statement))

    def on(self, port: int) -> list[str]:
        """Statements run on ``port``, health checks aside."""
        return [s for p, s in self.seen if p == port and "pg_current_wal" not in s]

    def clear(self) -> None:
        self.seen.clear()


@pytest.fixture(scope="module")
async def replica_env(pg_pair, settings) -> AsyncIterator[tuple]:
    """The app and a worker on the pair: primary DATABASE_URL, DATABASE_REPLICA_URLS."""
    name = f"roost_test_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(pg_pair.url().replace("postgresql://", "postgres://"))
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    await asyncio.to_thread(upgrade, pg_pair.url(name))
    await pg_pair.wait_replayed()
    own = settings.model_copy(
        update={
            "database_url": pg_pair.url(name),
            "database_replica_urls": pg_pair.replica_url(name),
            # Lenient, so that a replica whose replay is paused stays in use for the
            # read-your-writes test; a stopped one is left at once all the same.
            "replica_max_lag_s": 60.0,
            "arq_queue": f"roost-test-replica:{uuid.uuid4().hex[:8]}",
            "gc_freeze": False,
        }
    )
    engine = create_engine(own.database_url, pool_size=5, max_overflow=5)
    app = create_app(own, engine=engine)
    statements = Statements()
    reads = app.state.reads
    for e in (engine, *(r.engine for r in reads.replicas)):
        event.listen(e.sync_engine, "before_cursor_execute", statements)
    worker = WorkerControl(own, engine)
    await worker.start()
    try:
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://roost.test"
            ) as client,
        ):
            await reads.wait_checked()
            assert reads.replicas[0].usable, reads.status()
            yield own, engine, GQL(client), worker, statements, reads
    finally:
        await worker.stop()
        await engine.dispose()


async def usable(reads) -> None:
    """Wait for a round of health checks that finds the replica in use."""
    for _ in range(100):
        await reads.wait_checked()
        if reads.replicas[0].usable:
            return
    raise AssertionError(reads.status())


async def test_replica_serves_queries_and_never_a_write(replica_env, pg_pair):
    own, engine, gql, worker, statements, reads = replica_env
    make_users = user_maker(engine, own)
    author, *fans = await make_users(4)
    await follow_all(gql, fans, author)
    pid = await post(gql, author, "hello")
    for f in fans:
        assert (await gql(LIKE, {"id": pid}, token=f.token))["data"]["likePost"][
            "__typename"
        ] == "LikePostSuccess"
        await gql(COMMENT, {"id": pid}, token=f.token)
    await worker.drain()
    await pg_pair.wait_replayed()
    await usable(reads)
    statements.clear()
    # Anonymous pages: every read on the replica, nothing on the primary.
    out = await gql(PROFILE, {"u": author.username})
    user = out["data"]["user"]
    assert user["followerCount"] == 3 and len(user["followers"]["edges"]) == 3
    assert user["posts"]["edges"] == [{"node": {"caption": "hello", "likeCount": 3}}]
    assert statements.on(pg_pair.replica_ports[0])
    assert statements.on(pg_pair.primary_port) == []
    # A signed-in reader who wrote nothing lately: the feed is hydrated on the replica.
    (reader,) = await make_users(1)
    async with engine.begin() as conn:  # a follow written directly: no marker
        await conn.execute(
            text("INSERT INTO follows (id, follower_id, followee_id) VALUES (:i, :a, :b)"),
            {"i": uuid.uuid4(), "a": reader.id, "b": author.id},
        )
    await pg_pair.wait_replayed()
    statements.clear()
    feed = await gql(FEED, {"first": 5}, token=reader.token)
    assert [e["node"]["caption"] for e in feed["data"]["viewer"]["feed"]["edges"]] == ["hello"]
    assert statements.on(pg_pair.replica_ports[0])
    # Everything written went to the primary; the replica never saw a write.
    replica_writes = [s for s in statements.on(pg_pair.replica_ports[0]) if _WRITE.match(s)]
    assert replica_writes == []
    everything = [s for p, s in statements.seen if p == pg_pair.replica_ports[0]]
    assert not any(_WRITE.match(s) for s in everything)


async def test_replica_a_writer_reads_their_own_follow_at_once(replica_env, pg_pair):
    own, engine, gql, _, _, reads = replica_env
    make_users = user_maker(engine, own)
    viewer, target, other = await make_users(3)
    await pg_pair.wait_replayed()
    await usable(reads)
    replica = await asyncpg.connect(pg_pair.replica_url(make_url_db(own.database_url)))
    try:
        await replica.execute("SELECT pg_wal_replay_pause()")  # the replica falls behind
        try:
            out = await gql(FOLLOW, {"id": target.gid}, token=viewer.token)
            assert out["data"]["follow"]["__typename"] == "FollowSuccess"
            # The writer, at once: their own count, from the primary.
            me = (await gql(VIEWER, token=viewer.token))["data"]["viewer"]
            assert me["followingCount"] == 1
            assert (await gql(COUNTS, {"u": target.username}, token=viewer.token))["data"]["user"][
                "followerCount"
            ] == 1
            # Someone else, at the same moment, reads the replica: not there yet.
            assert reads.replicas[0].usable
            seen = (await gql(COUNTS, {"u": viewer.username}, token=other.token))["data"]
            assert seen["user"]["followingCount"] == 0
        finally:
            await replica.execute("SELECT pg_wal_replay_resume()")
    finally:
        await replica.close()
    await pg_pair.wait_replayed()
    seen = (await gql(COUNTS, {"u": viewer.username}, token=other.token))["data"]
    assert seen["user"]["followingCount"] == 1


async def test_replica_stopped_pages_come_from_the_primary(replica_env, pg_pair):
    own, engine, gql, worker, statements, reads = replica_env
    make_users = user_maker(engine, own)
    author, reader = await make_users(2)
    await follow_all(gql, [reader], author)
    await post(gql, author, "while it was down")
    await worker.drain()
    await pg_pair.wait_replayed()
    await usable(reads)
    pg_pair.stop_replica()
    try:
        # At once (the health check has not run yet) and after it noticed: every page
        # is served, by the primary.
        for _ in range(2):
            statements.clear()
            out = await gql(PROFILE, {"u": author.username})
            assert "errors" not in out, out
            assert out["data"]["user"]["posts"]["edges"][0]["node"]["caption"] == (
                "while it was down"
            )
            feed = await gql(FEED, {"first": 5}, token=reader.token)
            assert "errors" not in feed, feed
            assert feed["data"]["viewer"]["feed"]["edges"][0]["node"]["caption"] == (
                "while it was down"
            )
            assert statements.on(pg_pair.primary_port)
            assert statements.on(pg_pair.replica_ports[0]) == []
            await reads.wait_checked()
            assert not reads.replicas[0].usable and "down" in str(reads.status())
    finally:
        pg_pair.start_replica()
    await pg_pair.wait_replayed()
    await usable(reads)
    statements.clear()
    out = await gql(PROFILE, {"u": author.username})
    assert "errors" not in out
    assert statements.on(pg_pair.replica_ports[0])  # back on the replica
    assert statements.on(pg_pair.primary_port) == []


def make_url_db(url: str) -> str:
    """The database name of a URL."""
    return url.rsplit("/", 1)[1].split("?")[0]


SIGN_UP = """mutation($u: String!, $e: String!) { signUp(input: { username: $u, email: $e,
  password: "correct horse battery staple", displayName: "New" }) { __typename
  ... on SignUpSuccess { accessToken } ... on Error { code message } } }"""


async def test_replica_a_new_account_reads_itself_at_once(replica_env, pg_pair):
    own, engine, gql, _, _, reads = replica_env
    make_users = user_maker(engine, own)
    await pg_pair.wait_replayed()
    await usable(reads)
    replica = await asyncpg.connect(pg_pair.replica_url(make_url_db(own.database_url)))
    try:
        await replica.execute("SELECT pg_wal_replay_pause()")
        try:
            name = f"new_{uuid.uuid4().hex[:10]}"
            out = await gql(SIGN_UP, {"u": name, "e": f"{name}@example.org"})
            assert "errors" not in out, out
            token = out["data"]["signUp"]["accessToken"]
            assert reads.replicas[0].usable
            me = (await gql("{ viewer { username } }", token=token))["data"]["viewer"]
            assert me == {"username": name}
            # An account the replica has not replayed, signing in for the first time.
            (fresh,) = await make_users(1)
            out = await gql(LOG_IN, {"u": fresh.username, "p": TEST_PASSWORD})
            token = out["data"]["logIn"]["accessToken"]
            me = (await gql("{ viewer { username } }", token=token))["data"]["viewer"]
            assert me == {"username": fresh.username}
        finally:
            await replica.execute("SELECT pg_wal_replay_resume()")
    finally:
        await replica.close()


async def test_replica_idle_time_on_the_primary_is_no_lag(replica_env, pg_pair):
    own, engine, *_ = replica_env
    db = make_url_db(own.database_url)
    routing = ReadRouting(engine, own.database_url, [pg_pair.replica_url(db)], None)
    replica = await asyncpg.connect(pg_pair.replica_url(db))
    try:
        await pg_pair.wait_replayed()
        await routing.check()
        assert routing.replicas[0].lag_s == 0.0
        await asyncio.sleep(3)  # the primary idles: no commit to replay
        await replica.execute("SELECT pg_wal_replay_pause()")
        try:
            caught_up_at = time.monotonic()
            await routing.check()  # still caught up: nothing new to replay
            assert routing.replicas[0].lag_s == 0.0
            async with engine.connect() as conn:
                # A record without a commit first (a paused replica may apply one more
                # record), then a commit, which the replica holds back.
                await conn.execute(text("CHECKPOINT"))
                await conn.execute(text("CREATE TEMP TABLE lag_probe (x int) ON COMMIT DROP"))
                await conn.commit()
            await routing.check()
            first = routing.replicas[0].lag_s
            idle = await replica.fetchval(
                "SELECT extract(epoch FROM now() - pg_last_xact_replay_timestamp())"
            )
            # Behind by no more than since it was last seen caught up, however long the
            # primary had been idle before.
            assert first is not None and first <= time.monotonic() - caught_up_at, (first, idle)
            assert 0 < first
            await asyncio.sleep(0.5)
            await routing.check()  # paused: the lag it reports grows
            assert routing.replicas[0].lag_s > first
        finally:
            await replica.execute("SELECT pg_wal_replay_resume()")
        await pg_pair.wait_replayed()
        await routing.check()
        assert routing.replicas[0].lag_s == 0.0
    finally:
        await replica.close()
        await routing.aclose()
