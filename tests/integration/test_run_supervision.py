"""``roost run`` (``make run``) keeps its pieces up and leaves nothing behind: a worker
or an embedded Redis that dies (SIGKILL) is started again (Redis on the same URL), and
a SIGKILL of ``roost run`` itself leaves no embedded PostgreSQL, Redis or worker running
(app/embedded/watchdog.py, app/cli/servers.py ``Supervised``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from app.embedded.redis import _ping
from tests.support.polling import PATIENCE_S
from tests.support.servers import Output, free_port

ROOST = str(Path(sys.executable).with_name("roost"))


def until(check, what: str, within: float = 2 * PATIENCE_S):
    deadline = time.monotonic() + within
    while not (value := check()):
        assert time.monotonic() < deadline, f"{what}: not within {within} s"
        time.sleep(0.1)
    return value


def children(pid: int, needle: str) -> list[psutil.Process]:
    found = []
    try:
        for child in psutil.Process(pid).children(recursive=True):
            try:
                if needle in " ".join(child.cmdline()):
                    found.append(child)
            except psutil.Error:
                pass
    except psutil.Error:
        pass
    return found


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_run_restarts_its_worker_and_redis_and_leaves_nothing_when_killed(tmp_path):
    env = {
        k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "ARQ_QUEUE")
    }
    env.update(
        ROOST_DATA_DIR=str(tmp_path / "data"),
        PORT=str(free_port()),
        METRICS_PORT="0",
        WORKER_METRICS_PORT="0",
        ROOST_SEED_POSTS="0",
    )
    proc = subprocess.Popen(
        [ROOST, "run", "--no-load"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    out = Output(proc)
    try:
        out.wait_for("Roost is up", within=4 * PATIENCE_S)
        data = tmp_path / "data"
        postmaster = int((data / "postgres" / "postmaster.pid").read_text().split()[0])
        redis_url = (data / "redis" / "url").read_text().strip()

        # The worker, SIGKILLed, is started again.
        (worker,) = children(proc.pid, "app.cli worker")
        worker.kill()
        until(
            lambda: [w for w in children(proc.pid, "app.cli worker") if w.pid != worker.pid],
            "a new worker",
        )
        out.wait_for("worker exited (code -9); starting it again")

        # The embedded Redis, SIGKILLed, is started again on the same URL.
        (redis,) = children(proc.pid, "redis-server")
        redis.kill()
        until(lambda: not alive(redis.pid), "the old Redis gone")
        until(lambda: _ping(redis_url), "Redis back on the same URL")
        out.wait_for("embedded Redis started again")

        # roost run SIGKILLed: its servers and worker stop by themselves.
        (new_redis,) = children(proc.pid, "redis-server")
        workers = children(proc.pid, "app.cli worker")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        until(lambda: not alive(postmaster), "embedded PostgreSQL stopped")
        until(lambda: not alive(new_redis.pid), "embedded Redis stopped")
        until(lambda: not any(alive(w.pid) for w in workers), "worker stopped")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            out.finish(60)
