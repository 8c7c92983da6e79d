"""The worker's liveness (app/worker_health.py): ``roost worker`` beats every
WORKER_HEARTBEAT_S; ``roost worker --check`` fails once the beat is older than
WORKER_HEARTBEAT_MAX_AGE_S (a hung worker: SIGSTOPped here), passes again when it beats;
``/readyz`` reports the worker. And ``/readyz`` answers 200 at once after a PostgreSQL
restart, though its pooled connection died with the old server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.asgi import create_app
from app.embedded import EmbeddedPostgres
from tests.support.polling import PATIENCE_S, eventually
from tests.support.servers import throwaway_database

ROOST = str(Path(sys.executable).with_name("roost"))


def check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ROOST, "worker", "--check"],
        env=env,
        capture_output=True,
        text=True,
        timeout=2 * PATIENCE_S,
    )


@pytest.fixture
def worker_env(settings):
    """The environment of a ``roost worker`` of its own (database, queue, name)."""
    with throwaway_database() as url:
        yield {
            **os.environ,
            "DATABASE_URL": url,
            "REDIS_URL": settings.redis_url,
            "ARQ_QUEUE": f"roost-test-liveness:{uuid.uuid4().hex[:8]}",
            "WORKER_NAME": f"liveness-{uuid.uuid4().hex[:8]}",
            "WORKER_METRICS_PORT": "0",
            "WORKER_HEARTBEAT_S": "0.2",
            "WORKER_HEARTBEAT_MAX_AGE_S": "2",
            "DB_POOL_SIZE": "2",
            "DB_MAX_OVERFLOW": "2",
            "JWT_SECRET": settings.jwt_secret,
        }


def until(check_: Callable[[], Any], within: float = PATIENCE_S) -> Any:
    """Call ``check_`` until it returns something true (a state), at most ``within`` s."""
    deadline = time.monotonic() + within
    while not (value := check_()):
        assert time.monotonic() < deadline, f"not within {within} s"
        time.sleep(0.1)
    return value


def test_a_hung_worker_fails_its_check_and_passes_once_it_beats(worker_env):
    # No worker yet: the check fails and says so.
    first = check(worker_env)
    assert first.returncode == 1 and "no heartbeat" in first.stdout, first
    proc = subprocess.Popen(
        [ROOST, "worker"],
        env=worker_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        until(lambda: check(worker_env).returncode == 0, within=2 * PATIENCE_S)
        os.kill(proc.pid, signal.SIGSTOP)  # hung: alive, but runs nothing
        try:
            failed = until(lambda: (r := check(worker_env)).returncode == 1 and r)
            assert "last heartbeat" in failed.stdout, failed
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        until(lambda: check(worker_env).returncode == 0)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def test_readyz_reports_the_worker(client, worker):
    await worker.start()
    body = await eventually(
        lambda: _ready_worker(client, lambda v: v.startswith("ok: ")), within=PATIENCE_S
    )
    assert "heartbeat" in body["worker"]


async def _ready_worker(client: httpx.AsyncClient, test) -> dict | None:
    resp = await client.get("/readyz")
    body = resp.json()
    return body if "worker" in body and test(body["worker"]) else None


async def test_readyz_is_ready_at_once_after_a_postgres_restart(settings):
    with tempfile.TemporaryDirectory(prefix="roost-readyz-") as folder:
        pg = EmbeddedPostgres(Path(folder) / "postgres")
        pg.start()
        try:
            own = settings.model_copy(update={"database_url": pg.url("postgres")})
            app = create_app(own)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
                before = await http.get("/readyz")
                assert before.status_code == 200, before.text  # a pooled connection now
                pg.crash()
                pg.recover()
                after = await http.get("/readyz")
                assert after.status_code == 200, after.text
                assert after.json()["postgres"] == "ok"
        finally:
            pg.stop()
