"""The system under soak: an embedded PostgreSQL and a redis-server in a scratch folder,
``roost serve --workers N`` and ``roost worker`` on them, and the faults done to each
(SIGKILL, ``pg_ctl stop -m immediate``, a flushed Redis)."""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import httpx
import psutil
import redis

from app.embedded import EmbeddedPostgres, redis_server_binary, spawn, stop_process
from app.embedded import _free_port as free_port

#: Seconds a process or server gets to come up before the soak gives up on it.
START_S = 90.0


class RedisServer:
    """A redis-server on a fixed port (a restart keeps its URL), as durable as the
    embedded one of ``make run``: an append-only file fsynced every second."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start it; RuntimeError if it does not answer PING within START_S."""
        self.folder.mkdir(parents=True, exist_ok=True)
        cmd = [
            str(redis_server_binary()),
            "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.folder),
            "--logfile", str(self.folder / "redis.log"),
            "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
        ]  # fmt: skip
        self.proc = spawn(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_S
        while not self.ping():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.05)

    def ping(self) -> bool:
        client = redis.Redis.from_url(self.url, socket_timeout=0.5, socket_connect_timeout=0.5)
        try:
            return bool(client.ping())
        except (redis.RedisError, OSError):
            return False
        finally:
            client.close()

    def flush_and_kill(self) -> None:
        """Lose everything: FLUSHALL, SIGKILL, and its files deleted (a cache server
        replaced by an empty one: queue, timelines, guards, sessions' cache)."""
        client = redis.Redis.from_url(self.url, socket_timeout=2)
        try:
            client.flushall()
        finally:
            client.close()
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(15)
            self.proc = None
        shutil.rmtree(self.folder / "appendonlydir", ignore_errors=True)
        (self.folder / "dump.rdb").unlink(missing_ok=True)

    def clients(self) -> int:
        """Connected clients (INFO clients), this question's own included."""
        client = redis.Redis.from_url(self.url, socket_timeout=2)
        try:
            info: dict[str, Any] = client.info("clients")  # type: ignore[assignment]
            return int(info["connected_clients"])
        finally:
            client.close()

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None


class Stack:
    """The whole system in ``folder``: start, fault, measure and stop its parts."""

    def __init__(self, folder: Path, *, api_workers: int = 2) -> None:
        self.folder = folder
        self.api_workers = api_workers
        self.pg = EmbeddedPostgres(folder / "postgres")
        self.redis = RedisServer(folder / "redis")
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.database_url = ""
        self.api: subprocess.Popen[bytes] | None = None
        self.worker: subprocess.Popen[bytes] | None = None
        self._logs: list[IO[Any]] = []

    # -- start and stop ---------------------------------------------------------------

    def env(self) -> dict[str, str]:
        """The environment of every roost process of the soak."""
        return {
            **os.environ,
            "DATABASE_URL": self.database_url,
            "REDIS_URL": self.redis.url,
            "JWT_SECRET": self._secret,
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "METRICS_PORT": "0",
            "WORKER_METRICS_PORT": "0",
            # Every virtual user signs up from 127.0.0.1: one IP's password budget.
            "RATE_LIMIT_AUTH": "100000",
            # Tokens outlive a slow soak (a loaded machine stretches it past 15 min).
            "ACCESS_TOKEN_MINUTES": "120",
            "ROOST_LOG_LEVEL": "INFO",
            "PYTHONUNBUFFERED": "1",
        }

    def start(self) -> None:
        """PostgreSQL, Redis, migrations, the worker and the API (until /readyz is 200)."""
        self._secret = secrets.token_urlsafe(48)
        self.pg.start()
        self.database_url = self.pg.url("roost")
        self.redis.start()
        subprocess.run(
            [sys.executable, "-m", "app.cli", "migrate"],
            env=self.env(),
            check=True,
            stdout=self._log("migrate"),
            stderr=subprocess.STDOUT,
        )
        self.start_worker()
        cmd = [sys.executable, "-m", "app.cli", "serve", "--workers", str(self.api_workers)]
        log = self._log("api")
        self.api = spawn(cmd, env=self.env(), stdout=log, stderr=subprocess.STDOUT)
        self.wait_ready()
        deadline = time.monotonic() + START_S
        while len(self.api_children()) < self.api_workers:
            if time.monotonic() > deadline:
                raise RuntimeError("roost serve did not start its processes")
            time.sleep(0.2)

    def start_worker(self) -> None:
        log = self._log("worker")
        cmd = [sys.executable, "-m", "app.cli", "worker"]
        self.worker = spawn(cmd, env=self.env(), stdout=log, stderr=subprocess.STDOUT)

    def wait_ready(self, within: float = START_S) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if self.api is not None and self.api.poll() is not None:
                raise RuntimeError(f"roost serve exited ({self.api.returncode}); see api.log")
            try:
                if httpx.get(f"{self.base_url}/readyz", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"/readyz not 200 within {within:.0f} s")

    def _log(self, name: str) -> IO[Any]:
        f = open(self.folder / f"{name}.log", "a")
        self._logs.append(f)
        return f

    def stop(self) -> list[str]:
        """Stop everything it started (API and worker first), even half started; each
        part whatever the others did. Returns what failed to stop (empty: all)."""
        procs = [p for p in (self.api, self.worker) if p is not None]
        steps: list[Callable[[], object]] = [
            *(functools.partial(stop_process, p) for p in procs),
            self.redis.stop,
            self.pg.stop,
        ]
        failed = []
        for step in steps:
            try:
                step()
            except Exception as exc:
                failed.append(repr(exc))
        self.api = self.worker = None
        for f in self._logs:
            f.close()
        return failed

    # -- faults -----------------------------------------------------------------------

    def kill_worker(self) -> None:
        """SIGKILL the worker (the soak starts another, as a supervisor would)."""
        assert self.worker is not None
        self.worker.send_signal(signal.SIGKILL)
        self.worker.wait(15)

    def api_children(self) -> list[psutil.Process]:
        """The API's serving processes (uvicorn's children), not its supervisor."""
        if self.api is None:
            return []
        try:
            children = psutil.Process(self.api.pid).children()
        except psutil.NoSuchProcess:
            return []
        return [c for c in children if _is_spawned_server(c)]

    def kill_api_process(self) -> None:
        """SIGKILL one of the API's processes; return once uvicorn started another."""
        child = self.api_children()[0]
        child.send_signal(signal.SIGKILL)
        deadline = time.monotonic() + START_S
        while True:
            pids = [c.pid for c in self.api_children()]
            if len(pids) >= self.api_workers and child.pid not in pids:
                return
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not replace the killed API process")
            time.sleep(0.05)

    def crash_postgres(self) -> None:
        self.pg.crash()

    def recover_postgres(self) -> None:
        self.pg.recover()

    # -- measures ---------------------------------------------------------------------

    def processes(self) -> dict[str, list[psutil.Process]]:
        """The roost processes by role: ``api`` (supervisor and children), ``worker``."""
        out: dict[str, list[psutil.Process]] = {"api": [], "worker": []}
        if self.api is not None:
            with contextlib.suppress(psutil.NoSuchProcess):
                out["api"] = [psutil.Process(self.api.pid), *self.api_children()]
        if self.worker is not None and self.worker.poll() is None:
            with contextlib.suppress(psutil.NoSuchProcess):
                out["worker"] = [psutil.Process(self.worker.pid)]
        return out

    def open_api_connections(self) -> int:
        """TCP connections established to the API's port (clients of it)."""
        return sum(
            1
            for c in psutil.net_connections(kind="tcp")
            if c.laddr and c.laddr.port == self.port and c.status == psutil.CONN_ESTABLISHED
        )

    def log_text(self, name: str) -> str:
        path = self.folder / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""


def _is_spawned_server(proc: psutil.Process) -> bool:
    """A uvicorn worker process (multiprocessing spawn), not the resource tracker."""
    try:
        cmdline = " ".join(proc.cmdline())
    except psutil.Error:
        return False
    return "multiprocessing" in cmdline and "resource_tracker" not in cmdline
