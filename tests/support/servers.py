"""Helpers for tests that run Roost's own processes (``roost run``, ``roost serve``,
``roost worker``) against real servers: a throwaway database of their own, free ports,
reading a child's output until a line shows up."""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator

from sqlalchemy.engine import make_url

from app.embedded import _free_port, drop_database, ensure_database
from app.migrate import upgrade


def server_url() -> str:
    """DATABASE_URL of the run (a server; ``make test`` sets it)."""
    return os.environ["DATABASE_URL"]


@contextlib.contextmanager
def throwaway_database(*, migrate: bool = True) -> Iterator[str]:
    """Create ``roost_test_<random>`` on the run's server (migrated unless
    ``migrate=False``), yield its URL, drop it (``WITH (FORCE)``) afterwards."""
    name = f"roost_test_{uuid.uuid4().hex[:12]}"
    url = make_url(server_url()).set(database=name).render_as_string(hide_password=False)
    asyncio.run(ensure_database(url))
    try:
        if migrate:
            upgrade(url)
        yield url
    finally:
        asyncio.run(drop_database(url))


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on right now."""
    return _free_port()


class Output:
    """The merged stdout/stderr of a child process, read by a thread: ``wait_for``
    a line, ``text`` of everything so far."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._queue.put(line)
        self._queue.put(None)

    def _drain(self, timeout: float) -> bool:
        """Move available lines into ``lines``; False once the child's output ended."""
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            return True
        while True:
            if item is None:
                self._queue.put(None)
                return False
            self.lines.append(item)
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return True

    def wait_for(self, needle: str, within: float = 60.0) -> None:
        """Return once a line contains ``needle``; AssertionError (with the output)
        if the child ends or ``within`` seconds pass first."""
        deadline = time.monotonic() + within
        while not any(needle in line for line in self.lines):
            if time.monotonic() > deadline:
                raise AssertionError(f"no {needle!r} within {within} s:\n{self.text}")
            if not self._drain(0.2) and not any(needle in line for line in self.lines):
                raise AssertionError(f"exited ({self.proc.poll()}) before {needle!r}:\n{self.text}")

    def finish(self, within: float = 60.0) -> int:
        """Wait for the child to exit and its output to end; return its exit code."""
        deadline = time.monotonic() + within
        code = self.proc.wait(within)
        while self._drain(0.2) and time.monotonic() < deadline:
            pass
        return code

    @property
    def text(self) -> str:
        return "".join(self.lines)


@contextlib.asynccontextmanager
async def serving(app: object):
    """Serve the ASGI ``app`` with uvicorn on a free port of 127.0.0.1 in this event loop
    (no lifespan: the tests' shared app keeps its clients); yield its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="warning")
    )
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
