"""Many API processes and workers: ``roost serve --workers 2`` and two ``roost worker``
processes on one database, the queue on REDIS_URL and the feed store on the run's
Redis Cluster (tests/support/stores.py).

One test, one set of processes: every post fans out exactly once whichever worker
takes it (dispatched after commit, or only by the relays of both workers), a failing
event is dead-lettered once, and a subscriber on either API process hears what the
other one and the workers published. Its cost (~10 s on a quiet machine, more under
load) is mostly four Python processes importing Roost at once: the price of testing
the real process model rather than tasks in one process.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import re
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import httpx
import psutil
import pytest
from sqlalchemy import text

from adapters.feedstore.stores import feed_stores
from app.database import create_engine
from domain.db import new_id
from domain.outbox.events import PostCreated
from domain.outbox.registry import REGISTRY
from domain.posts.create_post import create_post
from domain.realtime import ONLINE_KEY, post_channel, user_channel
from schema.ids import decode_global_id
from tests.support.documents import FOLLOW
from tests.support.subscriptions import subscribers
from tests.support.ws import TRANSPORT_WS, WSClient, free_port

ROOST = str(Path(sys.executable).with_name("roost"))
CREATE = """mutation($c: String!) { createPost(input: { caption: $c }) {
  __typename ... on CreatePostSuccess { post { id } } } }"""
LIKE = """mutation($id: ID!) { likePost(input: { postId: $id }) { __typename } }"""
FEED_SUB = "subscription { feedItemAdded { caption author { username } } }"
ENGAGEMENT_SUB = """subscription($id: ID!) { postEngagementChanged(postId: $id) {
  likeCount } }"""


@pytest.fixture(scope="module")
def scale_db():
    from tests.support.databases import own_database

    yield from own_database("_scale")


@contextlib.contextmanager
def processes(env: dict[str, str], logs: Path):
    """``roost serve --workers 2`` on a free port and two ``roost worker``; yields
    (port, serve process, worker log files); stops them all (SIGTERM) at the end."""
    port = free_port()
    procs: list[subprocess.Popen] = []
    worker_logs = []
    try:
        with open(logs / "serve.log", "wb") as out:
            procs.append(
                subprocess.Popen(
                    [ROOST, "serve", "--workers", "2"],
                    env={**env, "PORT": str(port)},
                    stdout=out,
                    stderr=out,
                    start_new_session=True,
                )
            )
        for i in range(2):
            log = logs / f"worker{i}.log"
            worker_logs.append(log)
            with open(log, "wb") as out:
                procs.append(
                    subprocess.Popen(
                        [ROOST, "worker"], env=env, stdout=out, stderr=out, start_new_session=True
                    )
                )
        yield port, procs[0], worker_logs
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


async def _until(predicate, within: float = 60.0, what: str = "condition"):
    """Poll ``predicate`` (sync or async) until it returns something true."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        result = predicate()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result
        assert asyncio.get_running_loop().time() < deadline, f"{what} not met in {within}s"
        await asyncio.sleep(0.05)


def _api_children(serve: subprocess.Popen) -> list[psutil.Process]:
    """The uvicorn worker processes (those listening for / holding HTTP sockets)."""
    return [c for c in psutil.Process(serve.pid).children(recursive=True) if _is_api(c)]


def _is_api(proc: psutil.Process) -> bool:
    with contextlib.suppress(psutil.Error):
        return "multiprocessing" in " ".join(proc.cmdline()) and "spawn_main" in " ".join(
            proc.cmdline()
        )
    return False


def _sockets_per_process(children: list[psutil.Process], port: int) -> list[int]:
    """Established TCP connections to ``port`` held by each API process."""
    counts = []
    for c in children:
        conns = c.net_connections(kind="tcp")
        counts.append(
            sum(1 for k in conns if k.laddr and k.laddr.port == port and k.status == "ESTABLISHED")
        )
    return counts


def _job_starts(logs: list[Path], event_id: uuid.UUID, consumer: str = "") -> list[int]:
    """How many times each worker started a job of ``event_id`` (of ``consumer``'s alone
    when given; arq logs ``→ <job id>:<function>``)."""
    needle = f"→ outbox:{event_id}:{consumer + ':' if consumer else ''}"
    return [log.read_text(errors="replace").count(needle) for log in logs]


def _job_runs(logs: list[Path], event_id: uuid.UUID) -> list[str]:
    """What each run of the job of ``event_id`` returned, on any worker (arq logs
    ``<seconds>s ← <job id>:<function> ● <result>`` when a job ends)."""
    ends = re.compile(rf"← outbox:{event_id}:\S+ ● (\S+)")
    return [m.group(1) for log in logs for m in ends.finditer(log.read_text(errors="replace"))]


async def test_cluster_two_api_processes_and_two_workers_deliver_everything_once(
    scale_db, settings, redis_cluster
):
    from tests.support.users import user_maker

    own = settings.model_copy(
        update={
            "database_url": scale_db,
            "feed_redis_cluster_nodes": ",".join(redis_cluster.nodes),
            "arq_queue": f"roost-test-scale:{uuid.uuid4().hex[:8]}",
        }
    )
    env = {
        **os.environ,
        "DATABASE_URL": own.database_url,
        "REDIS_URL": own.redis_url,
        "FEED_REDIS_CLUSTER_NODES": own.feed_redis_cluster_nodes,
        "ARQ_QUEUE": own.arq_queue,
        "JWT_SECRET": own.jwt_secret,
        "PULL_THRESHOLD": str(own.pull_threshold),
        "PUSH_BACK_THRESHOLD": str(own.push_back_threshold),
        "FANOUT_BATCH_SIZE": str(own.fanout_batch_size),
        "RATE_LIMIT_ENABLED": "false",
        "WORKER_METRICS_PORT": "0",
        "JOB_ATTEMPTS": "3",  # the failing event's dead letter after 0.2 + 0.4 s of backoff
        "ROOST_LOG_LEVEL": "DEBUG",  # arq's line per job: who ran which event
        "DB_POOL_SIZE": "2",  # four processes on the shared test server (max_connections)
        "DB_MAX_OVERFLOW": "2",
        "HOST": "127.0.0.1",
    }
    engine = create_engine(own.database_url, pool_size=2, max_overflow=2)
    feed_redis = own.open_feed_redis()
    stores = feed_stores(feed_redis, own.feed_config)
    make_users = user_maker(engine, own)
    with tempfile.TemporaryDirectory() as tmp, processes(env, Path(tmp)) as (port, serve, logs):
        url = f"http://127.0.0.1:{port}"
        sockets: list[WSClient] = []
        try:
            async with httpx.AsyncClient(base_url=url, timeout=20) as http:

                async def ready() -> bool:
                    with contextlib.suppress(httpx.HTTPError):
                        return (await http.get("/readyz")).status_code == 200
                    return False

                await _until(ready, what="the API")
                await _until(lambda: len(_api_children(serve)) == 2, what="two API processes")
                await _until(
                    lambda: all("Starting worker" in p.read_text() for p in logs),
                    what="two workers",
                )

                async def gql(query, variables, token):
                    resp = await http.post(
                        "/graphql",
                        json={"query": query, "variables": variables},
                        headers={"Authorization": f"Bearer {token}"},
                    )
                    assert resp.status_code == 200, resp.text
                    return resp.json()

                (author,) = await make_users(1)
                fans = await make_users(12)  # push (pull at >= 40): 2 pages of 7
                for f in fans:
                    await gql(FOLLOW, {"id": author.gid}, f.token)
                for f in fans:  # every fan has a cached feed
                    await gql("{ viewer { feed(first: 1) { edges { cursor } } } }", {}, f.token)

                # Subscribers on both API processes: sockets until each process holds some.
                children = _api_children(serve)
                while min(_sockets_per_process(children, port)) < 2:
                    assert len(sockets) < 40, _sockets_per_process(children, port)
                    ws = await WSClient.open(
                        f"ws://127.0.0.1:{port}/graphql",
                        TRANSPORT_WS,
                        fans[len(sockets) % len(fans)].token,
                    )
                    await ws.subscribe(FEED_SUB)
                    sockets.append(ws)
                for i in range(len(sockets)):
                    fan = fans[i % len(fans)]

                    async def live(fan=fan) -> bool:
                        present = await feed_redis.client.zscore(ONLINE_KEY, str(fan.id))
                        return (
                            present is not None
                            and subscribers(redis_cluster, user_channel(fan.id)) >= 1
                        )

                    await _until(live, what=f"{fan.username} subscribed")

                async def waiting() -> int:
                    async with engine.connect() as conn:
                        return await conn.scalar(
                            text("SELECT count(*) FROM outbox WHERE dispatched_at IS NULL")
                        )

                await _until(lambda: _none(waiting()), what="follows consumed")

                # Posts: half dispatched after commit by the API, half only by the relays.
                via_api = [
                    (await gql(CREATE, {"c": f"api{i}"}, author.token))["data"]["createPost"]
                    for i in range(4)
                ]
                assert all(p["__typename"] == "CreatePostSuccess" for p in via_api)
                relayed = [
                    await create_post(
                        engine, author.id, caption=f"relay{i}", counter_shards=4, dispatcher=None
                    )
                    for i in range(4)
                ]
                await _until(lambda: _none(waiting()), what="posts fanned out")

                events = await _post_events(engine, author.id)
                assert len(events) == 8
                # Each (event, consumer) job once, by one worker.
                starts = [
                    _job_starts(logs, e, c) for e in events for c in REGISTRY.consumers(PostCreated)
                ]
                assert all(sum(s) == 1 for s in starts), starts
                captions = {f"api{i}" for i in range(4)} | {p.caption for p in relayed}
                for f in fans:
                    (page,) = await stores.feeds.page([f.id], None, 50)
                    assert len(page) == 8 == len(set(page)), f
                    out = await gql(
                        "{ viewer { feed(first: 20) { edges { node { caption } } } } }",
                        {},
                        f.token,
                    )
                    assert "errors" not in out, out
                    got = [e["node"]["caption"] for e in out["data"]["viewer"]["feed"]["edges"]]
                    assert sorted(got) == sorted(captions)

                # Every socket, on either process, heard each post once (its fan-out
                # was published by whichever worker ran it).
                for ws in sockets:
                    heard = [
                        (await ws.next())["data"]["feedItemAdded"]["caption"] for _ in range(8)
                    ]
                    assert sorted(heard) == sorted(captions)
                    await ws.nothing(0.3)

                # A like on one process reaches engagement subscribers on both.
                post_gid = via_api[0]["post"]["id"]
                ops = [await ws.subscribe(ENGAGEMENT_SUB, {"id": post_gid}) for ws in sockets]
                assert len(ops) == len(sockets)
                pchan = post_channel(decode_global_id(post_gid, "Post", "id"))
                await _until(
                    lambda: subscribers(redis_cluster, pchan) == 2,
                    what="both processes subscribed to the post",
                )
                await gql(LIKE, {"id": post_gid}, fans[0].token)
                for ws in sockets:
                    got = (await ws.next())["data"]["postEngagementChanged"]
                    assert got == {"likeCount": 1}

                # A consumer that always fails (a payload it cannot read; the event has
                # one consumer): one dead letter, after every attempt.
                bad = new_id()
                async with engine.begin() as conn:
                    await conn.execute(
                        text(
                            "INSERT INTO outbox (id, topic, aggregate_id, payload) VALUES"
                            " (:id, 'follow_request.created', :a, '{\"requester_id\": \"x\"}')"
                        ),
                        {"id": bad, "a": author.id},
                    )

                async def lettered() -> list:
                    async with engine.connect() as conn:
                        return (
                            await conn.execute(
                                text("SELECT attempts FROM dead_letters WHERE event_id = :e"),
                                {"e": bad},
                            )
                        ).all()

                (row,) = await _until(lettered, what="the dead letter")
                assert row.attempts == 3
                # Each attempt ran once; a run the relay added after the dead letter
                # finds the event dispatched ('already') and does nothing.
                await _until(
                    lambda: "'dead-letter'" in _job_runs(logs, bad), what="the last attempt's end"
                )
                runs = _job_runs(logs, bad)
                assert runs.count("'dead-letter'") == 1, runs
                assert sum(_job_starts(logs, bad)) - runs.count("'already'") == 3, runs
                await _until(lambda: _none(waiting()), what="the outbox drained")
                assert len(await lettered()) == 1
        finally:
            for ws in sockets:
                with contextlib.suppress(Exception):
                    await ws.close()
            await feed_redis.aclose()
            await engine.dispose()


async def _post_events(engine, author_id: uuid.UUID) -> list[uuid.UUID]:
    """The ``post.created`` outbox events of the author's posts."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT o.id FROM outbox o JOIN posts p ON p.id = o.aggregate_id"
                " WHERE o.topic = 'post.created' AND p.author_id = :a"
            ),
            {"a": author_id},
        )
        return list(rows.scalars())


async def _none(count) -> bool:
    return await count == 0
