"""The feed under failure: a SIGKILLed worker, a flushed Redis, an unreachable Redis,
consumers that keep failing (dead letters), and SQL round trips per page."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from arq import create_pool
from arq.connections import RedisSettings
from arq.worker import Worker, func
from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy import event, text

from adapters.feedstore.stores import feed_stores
from app.asgi import create_app
from app.container import WorkerDeps
from app.embedded import EmbeddedRedis, redis_server_binary
from app.embedded.redis import _ping
from app.graphql import build_schema
from app.jobs import ArqDispatcher
from domain.outbox import registry
from domain.outbox.events import Event
from domain.outbox.jobs import CONSUME_EVENT, job_id
from domain.outbox.process import list_dead_letters, replay_dead_letters
from domain.outbox.registry import Registry
from domain.outbox.unit_of_work import unit_of_work
from domain.posts.create_post import create_post
from domain.social.follow_user import follow_user
from schema.context import Context, Limits
from tests.support.actions import feed_captions, follow_all, post, walk_feed
from tests.support.checks import feed_audit
from tests.support.documents import FEED
from tests.support.graphql import GQL
from tests.support.polling import PATIENCE_S, eventually
from tests.support.servers import free_port
from tests.support.worker import WorkerControl
from workers.deps import DEPS
from workers.events import consume_outbox_event

ROOST = str(Path(sys.executable).with_name("roost"))


def _worker_env(settings, queue: str) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": settings.database_url,
        "REDIS_URL": settings.redis_url,
        "ARQ_QUEUE": queue,
        "WORKER_METRICS_PORT": "0",
        "JOB_TIMEOUT_S": "2",  # a killed worker's job runs again after 2 + 10 s
        "PULL_THRESHOLD": str(settings.pull_threshold),
        "PUSH_BACK_THRESHOLD": str(settings.push_back_threshold),
        "FANOUT_BATCH_SIZE": str(settings.fanout_batch_size),
        "JWT_SECRET": settings.jwt_secret,
    }


async def _spawn_worker(env: dict[str, str]) -> asyncio.subprocess.Process:
    """`roost worker` in its own process group (so SIGKILL takes all of it)."""
    return await asyncio.create_subprocess_exec(ROOST, "worker", env=env, start_new_session=True)


async def test_sigkilled_worker_mid_fan_out_delivers_once_after_restart(
    make_users, worker: WorkerControl, settings, engine
):
    (author,) = await make_users(1)
    fans = await make_users(35)  # a push author (pull at >= 40): 5 pages of 7
    for f in fans:
        await follow_user(engine, f.id, author.id, counter_shards=4)
    await worker.drain()
    await worker.stop()  # this test's jobs go to its own queue and subprocess workers
    queue = f"roost-test-kill:{uuid.uuid4().hex[:8]}"
    env = _worker_env(settings, queue)
    redis = Redis.from_url(settings.redis_url)
    stores = feed_stores(redis, settings.feed_config)
    dispatcher = ArqDispatcher(settings.redis_url, queue)
    procs: list[asyncio.subprocess.Process] = []
    blocker = await engine.connect()
    try:
        # every fan has a complete (empty) cached feed
        await stores.feeds.create_empty([f.id for f in fans])
        first = await _spawn_worker(env)
        procs.append(first)
        # Hold a lock that the fan-out's follower-page query waits on: the job starts,
        # writes the author's own stores, then blocks mid fan-out.
        tx = await blocker.begin()
        await blocker.execute(text("LOCK TABLE follows IN ACCESS EXCLUSIVE MODE"))
        created = await create_post(
            engine, author.id, caption="survives kill -9", counter_shards=4, dispatcher=dispatcher
        )
        async with engine.connect() as conn:
            event_id = await conn.scalar(
                text("SELECT id FROM outbox WHERE aggregate_id = :p"), {"p": created.id}
            )
        in_progress = f"arq:in-progress:{job_id(event_id, registry.FEED)}"
        await eventually(lambda: redis.exists(in_progress))
        # Simulate pages already written before the crash for a third of the fans.
        for f in fans[:12]:
            await redis.zadd(stores.feeds.key(f.id), {created.id.bytes: 1})
        os.killpg(first.pid, signal.SIGKILL)
        await asyncio.wait_for(first.wait(), PATIENCE_S)
        await tx.rollback()  # release the lock
        written = [await redis.zscore(stores.feeds.key(f.id), created.id.bytes) for f in fans]
        assert sum(w is not None for w in written) == 12  # the killed job wrote no page
        second = await _spawn_worker(env)
        procs.append(second)

        async def dispatched():
            async with engine.connect() as conn:
                return await conn.scalar(
                    text("SELECT dispatched_at IS NOT NULL FROM outbox WHERE id = :e"),
                    {"e": event_id},
                )

        await eventually(dispatched, within=40, step=0.2)  # in-progress key expires ~12 s
        for f in fans:
            (page,) = await stores.feeds.page([f.id], None, 10)
            assert [e.post_id for e in page] == [created.id], f  # exactly once
    finally:
        await blocker.close()
        for p in procs:
            if p.returncode is None:
                os.killpg(p.pid, signal.SIGTERM)
                await asyncio.wait_for(p.wait(), 20)
        await dispatcher.close()
        await redis.aclose()
        await worker.start()


async def test_flushall_rebuilds_every_feed_with_the_same_posts(make_users, settings, engine):
    """A Redis of its own (FLUSHALL would hit other runs on a shared server)."""
    with tempfile.TemporaryDirectory() as tmp:
        own = EmbeddedRedis(Path(tmp), persist=False)
        url = own.start()
        own_settings = settings.model_copy(update={"redis_url": url})
        app = create_app(own_settings, engine=engine)
        control = WorkerControl(own_settings, engine)
        await control.start()
        try:
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://roost.test"
            ) as client:
                gql = GQL(client)
                (push_author,) = await make_users(1)
                (pull_author,) = await make_users(1)
                fans = await make_users(42)  # pull_author gets >= 40: pull
                await follow_all(gql, fans, pull_author)
                await follow_all(gql, fans[:5], push_author)
                await control.drain()
                for i in range(3):
                    await post(gql, push_author, f"push{i}")
                    await post(gql, pull_author, f"pull{i}")
                await control.drain()
                before = {f.id: await feed_captions(gql, f) for f in fans[:8]}
                assert before[fans[0].id] == ["pull2", "push2", "pull1", "push1", "pull0", "push0"]
                assert before[fans[7].id] == ["pull2", "pull1", "pull0"]
                r = Redis.from_url(url)
                await r.flushall()
                await r.aclose()
                for f in fans[:8]:  # never an empty page: each feed rebuilds on read
                    assert await feed_captions(gql, f) == before[f.id]
        finally:
            await control.stop()
            own.stop()


async def test_unreachable_redis_serves_the_same_pages_from_postgres(
    gql, make_users, worker, settings, engine
):
    reader, a, b = await make_users(3)
    await follow_all(gql, [reader], a)
    await follow_all(gql, [reader], b)
    for i in range(4):
        await post(gql, a, f"a{i}")
        await post(gql, b, f"b{i}")
    await worker.drain()
    down = create_app(
        settings.model_copy(update={"redis_url": "redis://127.0.0.1:1/0"}), engine=engine
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=down), base_url="http://roost.test"
    ) as client:
        down_gql = GQL(client)
        after = None
        while True:  # walk both servers page by page with each other's cursors
            up_page = await gql(FEED, {"first": 3, "after": after}, token=reader.token)
            down_page = await down_gql(FEED, {"first": 3, "after": after}, token=reader.token)
            assert "errors" not in down_page, down_page
            assert down_page["data"] == up_page["data"]
            info = up_page["data"]["viewer"]["feed"]["pageInfo"]
            if not info["hasNextPage"]:
                break
            after = info["endCursor"]
        auth = {"Authorization": f"Bearer {settings.metrics_token}"}
        metrics = (await client.get("/metrics", headers=auth)).text
    line = next(
        x for x in metrics.splitlines() if x.startswith("roost_feed_postgres_fallbacks_total")
    )
    assert float(line.split()[-1]) >= 3


@dataclass(frozen=True)
class Flaky(Event):
    """An event only this module's workers consume."""

    topic = "test.flaky"
    aggregate = "user_id"
    user_id: uuid.UUID


async def _keep_relay_away(engine, event_id: uuid.UUID) -> None:
    """Keep the session worker's relay (which knows no ``test.*`` consumer) off the row."""
    async with engine.begin() as conn:
        await conn.execute(
            text("UPDATE outbox SET available_at = now() + interval '1 hour' WHERE id = :e"),
            {"e": event_id},
        )


async def test_failing_consumer_retries_with_backoff_then_dead_letters(
    make_users, settings, engine
):
    """A real arq worker whose consumer always fails: 5 attempts, then a dead letter that
    `replay` re-drives to a consumer that now works."""
    (author,) = await make_users(1)
    queue = f"roost-test-dlq:{uuid.uuid4().hex[:8]}"
    calls: list[float] = []
    healthy = asyncio.Event()

    async def flaky(event: Flaky, event_id: uuid.UUID) -> None:
        calls.append(asyncio.get_running_loop().time())
        if not healthy.is_set():
            raise ConnectionError("feed store unreachable")

    async def startup(ctx) -> None:
        ctx[DEPS] = WorkerDeps(
            engine,
            settings=settings,
            registry=Registry({Flaky: ("flaky",)}),
            consumers={"flaky": {Flaky: flaky}},
            max_attempts=5,
        )

    async def run_worker_until_idle() -> None:
        w = Worker(
            functions=[func(consume_outbox_event, name=CONSUME_EVENT, max_tries=5)],
            redis_settings=RedisSettings.from_dsn(settings.redis_url),
            queue_name=queue,
            on_startup=startup,
            burst=True,
            poll_delay=0.05,
            keep_result=0,
            handle_signals=False,
        )
        try:
            await w.async_run()
        finally:
            await w.close()

    async with unit_of_work(engine) as uow:
        conn = uow.conn
        event_id = (await uow.record(Flaky(author.id))).id
        # keep the session worker's relay away from this row
        await conn.execute(
            text("UPDATE outbox SET available_at = now() + interval '1 hour' WHERE id = :e"),
            {"e": event_id},
        )
    pool = await create_pool(RedisSettings.from_dsn(settings.redis_url), default_queue_name=queue)
    try:
        await pool.enqueue_job(
            CONSUME_EVENT, str(event_id), "flaky", _job_id=job_id(event_id, "flaky")
        )
        await run_worker_until_idle()
        assert len(calls) == 5
        gaps = [b - a for a, b in itertools.pairwise(calls)]
        # 0.2, 0.4, 0.8, 1.6 s (±20 % jitter), never above 3 s
        for gap, base in zip(gaps, (0.2, 0.4, 0.8, 1.6), strict=True):
            assert base * 0.8 - 0.05 <= gap <= min(3.0, base * 1.2) + 0.5, gaps
        letters = [d for d in await list_dead_letters(engine) if d.event_id == event_id]
        assert len(letters) == 1 and letters[0].attempts == 5
        assert "feed store unreachable" in letters[0].error

        healthy.set()
        assert letters[0].consumer == "flaky"
        assert await replay_dead_letters(engine, [letters[0].id]) == 1
        await _keep_relay_away(engine, event_id)
        await pool.enqueue_job(
            CONSUME_EVENT, str(event_id), "flaky", _job_id=job_id(event_id, "flaky")
        )
        await run_worker_until_idle()
        assert len(calls) == 6
        async with engine.connect() as conn:
            done = await conn.scalar(
                text("SELECT dispatched_at IS NOT NULL FROM outbox WHERE id = :e"), {"e": event_id}
            )
        assert done
        assert [d for d in await list_dead_letters(engine) if d.event_id == event_id] == []
    finally:
        await pool.aclose()


async def test_a_feed_page_costs_the_same_sql_round_trips_whatever_its_size(
    gql, make_users, worker, engine
):
    reader, *authors = await make_users(6)
    await follow_all(gql, [reader], authors[0])
    for a in authors[1:]:
        await follow_all(gql, [reader], a)
    for i in range(6):
        for a in authors:
            await post(gql, a, f"{a.username}-{i}")
    await worker.drain()
    await feed_captions(gql, reader)  # build the cached feed first

    statements: list[str] = []

    def count(conn, cursor, statement, *args):
        statements.append(statement)

    async def cost(first: int) -> int:
        statements.clear()
        out = await gql(
            """query($n: Int!) { viewer { feed(first: $n) { edges { node { caption
                author { username followerCount followedByViewer } } } } } }""",
            {"n": first},
            token=reader.token,
        )
        assert len(out["data"]["viewer"]["feed"]["edges"]) == first
        return len(statements)

    event.listen(engine.sync_engine, "before_cursor_execute", count)
    try:
        small, large = await cost(5), await cost(25)
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", count)
    print(f"SQL statements per feed page: first=5 -> {small}, first=25 -> {large}")
    assert small == large <= 10


@pytest.mark.parametrize("order", ["RECENT", "RANKED"])
async def test_home_feed_without_a_configured_redis_is_service_unavailable(
    make_users, settings, engine, order
):
    """No Redis configured (Context.stores None): the feed answers SERVICE_UNAVAILABLE in
    either order, a typed error, never a masked internal one."""
    (user,) = await make_users(1)
    schema = build_schema(settings)
    ctx = Context(engine=engine, tokens=settings.token_config, limits=Limits(), bearer=user.token)
    result = await schema.execute(
        f"{{ viewer {{ feed(first: 5, order: {order}) {{ edges {{ cursor }} }} }} }}",
        context_value=ctx,
    )
    assert result.errors is not None and len(result.errors) == 1, result.errors
    assert result.errors[0].extensions == {"code": "SERVICE_UNAVAILABLE"}
    assert result.data == {"viewer": {"feed": None}} or result.data is None


def _pk(gid: str) -> uuid.UUID:
    from schema.ids import decode_global_id

    return decode_global_id(gid, "Post", "id")


class SnapshotRedis:
    """A redis-server of the test's own on a fixed port with RDB snapshots only, as the
    embedded Redis ran (``--save 60 1``, no append-only file): a restart brings back
    what the last SAVE held, and nothing written after it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                str(redis_server_binary()),
                *("--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.folder)),
                *("--appendonly", "no", "--save", "60 1", "--dbfilename", "dump.rdb"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + PATIENCE_S
        while not _ping(self.url, timeout=0.2):
            assert time.monotonic() < deadline and self.proc.poll() is None, "no redis"
            time.sleep(0.05)

    async def crash(self) -> None:
        """SHUTDOWN NOSAVE: everything written since the last save is gone."""
        client = Redis.from_url(self.url)
        with contextlib.suppress(RedisError):
            await client.shutdown(nosave=True)
        await client.aclose()
        assert self.proc is not None
        await asyncio.to_thread(self.proc.wait, 15)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(15)
            self.proc = None


async def test_a_feed_store_restarted_from_an_older_snapshot_never_serves_short_feeds(
    make_users, worker: WorkerControl, settings, engine
):
    """The feed store comes back from a snapshot older than acknowledged writes: posts
    fanned out (and marked done) after the last SAVE are in no timeline, while every key
    of the snapshot still says it is complete: the readers' cached feeds (a push author,
    a reader's own post) and a pull author's store. The store must notice and rebuild
    those keys; every reader's feed walked through the API equals the SQL set."""
    await worker.stop()  # this test's events go to its own worker, on its own Redis
    with tempfile.TemporaryDirectory() as tmp:
        own = SnapshotRedis(Path(tmp))
        own.start()
        knobs = {"pull_threshold": 3, "push_back_threshold": 2}
        own_settings = settings.model_copy(
            update={"redis_url": own.url, "arq_queue": f"roost-test-snap:{uuid.uuid4().hex[:8]}"}
            | knobs
        )
        control = WorkerControl(own_settings, engine)
        await control.start()
        try:
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=create_app(own_settings, engine=engine)),
                base_url="http://roost.test",
            ) as client:
                gql = GQL(client)
                pusher, puller, r1, r2, f1, f2 = await make_users(6)
                readers = [r1, r2]
                await follow_all(gql, readers, pusher)  # 2 followers: push
                await follow_all(gql, [*readers, f1, f2], puller)  # 4 >= 3: pull
                await control.drain()
                for tag in ("before1", "before2", "before3"):
                    await post(gql, pusher, f"push-{tag}")
                    await post(gql, puller, f"pull-{tag}")
                    await post(gql, r1, f"own-{tag}")
                await control.drain()
                for r in readers:  # their cached feeds exist, and so does puller's store
                    await feed_captions(gql, r)
                snap = Redis.from_url(own.url)
                await snap.save()
                after = {
                    who.id: await post(gql, who, f"{kind}-after")
                    for who, kind in ((pusher, "push"), (puller, "pull"), (r1, "own"))
                }
                await control.drain()  # fanned out and marked done
                expected = {
                    r.username: await walk_feed(gql, r, 2) for r in readers
                }  # read from the cache, before the crash
                assert [c for c in expected[r1.username] if c.endswith("after")] == [
                    "own-after",
                    "pull-after",
                    "push-after",
                ]
                await control.stop()
                await own.crash()
                own.start()  # the same port and folder: back at the SAVE
                # Where the acknowledged writes were lost (printed: the diagnosis).
                stores = feed_stores(snap, own_settings.feed_config)
                keys = [stores.feeds.key(u.id) for u in (*readers, pusher, puller)]
                keys += [stores.author_posts.key(u.id) for u in (pusher, puller, r1)]
                for key in keys:
                    held = set(await snap.zrange(key, 0, -1))
                    kept = sum(_pk(gid).bytes in held for gid in after.values())
                    state = "exists" if await snap.exists(key) else "missing"
                    print(f"after the restart: {key} {state}, holds {kept} of the 3 new posts")
                await snap.aclose()
                walks = {r.username: await walk_feed(gql, r, 2) for r in readers}
                assert walks == expected
                wrong = await feed_audit(gql, engine, [(u.id, u.token) for u in readers])
                assert wrong == {}
        finally:
            await control.stop()
            own.stop()
            await worker.start()


async def test_the_embedded_redis_keeps_acknowledged_writes_across_a_crash():
    """The embedded Redis of ``make run`` is as durable as compose's (append-only file,
    fsync every second): a write acknowledged before a SHUTDOWN NOSAVE (no snapshot at
    exit) is there after a restart from the same folder."""
    with tempfile.TemporaryDirectory() as tmp:
        first = EmbeddedRedis(Path(tmp), persist=True)
        client = Redis.from_url(first.start())
        try:
            config = await client.config_get("append*")
            assert (config["appendonly"], config["appendfsync"]) == ("yes", "everysec"), config
            await client.set("acknowledged", b"1")
            with contextlib.suppress(RedisError):
                await client.shutdown(nosave=True)
        finally:
            await client.aclose()
            first.stop()
        again = EmbeddedRedis(Path(tmp), persist=True)
        client = Redis.from_url(again.start())
        try:
            assert await client.get("acknowledged") == b"1"
        finally:
            await client.aclose()
            again.stop()
