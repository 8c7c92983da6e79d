"""The media worker killed mid-job (SIGKILL, no clean-up of any kind) and started again:
arq runs the job again once its in-progress key expires (MEDIA_JOB_TIMEOUT_S + 10 s),
and the post publishes exactly once: one ``post.created``, one finished fan-out, one
entry in the follower's feed, one ``posts`` count, one POST_PUBLISHED notification.

A real ``roost worker`` process on this run's PostgreSQL and Redis, on a queue of its
own, behind an API in this process that shares its media folder."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import httpx
import pytest
from redis.asyncio import Redis
from sqlalchemy import text

from app.asgi import create_app
from domain.media.process_post_media import WORK_PREFIX
from schema.ids import decode_global_id
from tests.support.documents import FEED, FOLLOW
from tests.support.graphql import GQL
from tests.support.media_files import jpeg
from tests.support.media_posts import create_with, post_as_seen, upload
from tests.support.polling import PATIENCE_S, eventually

MEDIA_JOB_TIMEOUT_S = 5


def start_worker(settings, queue: str, log) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DATABASE_URL": settings.database_url,
        "REDIS_URL": settings.redis_url,
        "ARQ_QUEUE": queue,
        "MEDIA_DIR": str(settings.media_dir),
        "MEDIA_JOB_TIMEOUT_S": str(MEDIA_JOB_TIMEOUT_S),
        "JWT_SECRET": settings.jwt_secret,
        "METRICS_PORT": "0",
        "WORKER_METRICS_PORT": "0",
        "ROOST_LOG_LEVEL": "WARNING",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "app.cli", "worker"], env=env, stdout=log, stderr=subprocess.STDOUT
    )


def leftovers(pid: int) -> list[Path]:
    """The temporary folders of media jobs of process ``pid``."""
    return list(Path(tempfile.gettempdir()).glob(f"{WORK_PREFIX}{pid}-*"))


@pytest.fixture
async def own_queue(settings, engine):
    """(GQL client, settings) of an API on a queue nobody else consumes."""
    queue = f"roost-test-kill:{uuid.uuid4().hex[:12]}"
    mine = settings.model_copy(update={"arq_queue": queue})
    app = create_app(mine, engine=engine)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://roost.test") as client:
        yield client, GQL(client), mine


async def test_the_worker_killed_mid_job_publishes_the_post_exactly_once(
    own_queue, make_users, engine, tmp_path
):
    client, gql, settings = own_queue
    author, fan = await make_users(2)
    assert "errors" not in await gql(FOLLOW, {"id": author.gid}, token=fan.token)
    # Big enough that decoding and the variants take a while (the kill lands inside).
    data = jpeg(tmp_path / "big.jpg", 6000, 4000).read_bytes()
    upload_id = await upload(gql, client, author, data)
    created = await create_with(gql, author, [upload_id], "survives a kill")
    gid = created["post"]["id"]
    post_id = decode_global_id(gid, "Post", "id")
    async with engine.connect() as conn:
        event_id = await conn.scalar(
            text(
                "SELECT id FROM outbox WHERE topic = 'post.media_uploaded'"
                " AND payload->>'post_id' = :p"
            ),
            {"p": str(post_id)},
        )
    in_progress = f"arq:in-progress:outbox:{event_id}:media"
    redis = Redis.from_url(settings.redis_url)
    log = tempfile.TemporaryFile()
    worker = start_worker(settings, settings.arq_queue, log)
    try:
        await eventually(lambda: redis.exists(in_progress), within=PATIENCE_S)
        await asyncio.sleep(0.3)  # inside the processor by now
        killed = worker.pid
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
        left = leftovers(killed)
        assert left, "the killed job's temporary folder is there (it was mid-job)"
        async with engine.connect() as conn:
            state = await conn.scalar(text("SELECT state FROM posts WHERE id = :p"), {"p": post_id})
        assert state == "processing", "the kill was meant to land before publishing"
        assert await post_as_seen(gql, gid, fan) is None

        worker = start_worker(settings, settings.arq_queue, log)

        async def published() -> bool:
            seen = await post_as_seen(gql, gid, fan)
            return seen is not None and seen["state"] == "PUBLISHED"

        await eventually(published, within=PATIENCE_S + MEDIA_JOB_TIMEOUT_S + 10)

        async def settled() -> bool:  # every event of the post consumed
            async with engine.connect() as conn:
                return not await conn.scalar(
                    text(
                        "SELECT count(*) FROM outbox WHERE dispatched_at IS NULL"
                        " AND payload->>'post_id' = :p"
                    ),
                    {"p": str(post_id)},
                )

        await eventually(settled)
    finally:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
        await redis.aclose()
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    """
                    SELECT
                      (SELECT count(*) FROM outbox WHERE topic = 'post.created'
                        AND payload->>'post_id' = :p) AS created,
                      (SELECT count(*) FROM outbox o JOIN outbox_consumers c
                        ON c.event_id = o.id AND c.consumer = 'feed' AND c.outcome = 'done'
                        WHERE o.topic = 'post.created' AND o.payload->>'post_id' = :p) AS fanned,
                      (SELECT count(*) FROM notifications WHERE post_id = CAST(:p AS uuid)
                        AND kind = 'post_published') AS told,
                      (SELECT coalesce(sum(value), 0) FROM counter_shards
                        WHERE entity_id = :a AND kind = 'posts') AS counted
                    """
                ),
                {"p": str(post_id), "a": author.id},
            )
        ).one()
    assert (row.created, row.fanned, row.told, row.counted) == (1, 1, 1, 1)
    # The restarted worker swept the killed one's temporary folder.
    assert not leftovers(killed)
    feed = await gql(FEED, {"first": 20, "after": None}, token=fan.token)
    ids = [e["node"]["id"] for e in feed["data"]["viewer"]["feed"]["edges"]]
    assert ids.count(gid) == 1
