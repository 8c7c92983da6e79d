"""Start the servers a command needs, and stop them on exit, Ctrl-C, SIGTERM or SIGHUP
(not named ``services``: the package's function of that name would shadow it)."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from app.embedded.admin import _tune_for_tests
from app.embedded.postgres import EmbeddedPostgres
from app.embedded.processes import log
from app.embedded.redis import EmbeddedRedis

if TYPE_CHECKING:
    from app.settings import Settings

#: Name of the application database in embedded mode (``roost run``, ``roost migrate``, …).
DEFAULT_DATABASE = "roost"


class ServiceURLs(NamedTuple):
    """A PostgreSQL URL naming one database, and a ``redis://`` URL (None: not asked for)."""

    database_url: str
    redis_url: str | None


@contextlib.contextmanager
def _exit_on_signals() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into SystemExit, so ``finally`` blocks stop the servers."""
    if sys.platform == "win32" or not _in_main_thread():
        yield
        return

    def _raise(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    with _signal_handlers((signal.SIGTERM, signal.SIGHUP), _raise):
        yield


@contextlib.contextmanager
def _shielded() -> Iterator[None]:
    """Ignore SIGINT/SIGTERM/SIGHUP while servers are being stopped, so an impatient
    second Ctrl-C cannot leave one half-stopped."""
    if not _in_main_thread():
        yield
        return
    with _signal_handlers((signal.SIGINT, signal.SIGTERM, signal.SIGHUP), signal.SIG_IGN):
        yield


@contextlib.contextmanager
def _signal_handlers(sigs: tuple[signal.Signals, ...], handler: Any) -> Iterator[None]:
    """Install ``handler`` for ``sigs``; put the previous handlers back on exit."""
    old = {s: signal.signal(s, handler) for s in sigs}
    try:
        yield
    finally:
        for s, previous in old.items():
            signal.signal(s, previous)


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
    """Yield the URLs of a PostgreSQL and a Redis, starting embedded ones for those
    unset, under ``settings.data_dir`` (``fresh``: a temporary folder, fsync off, deleted
    on exit). ``database`` names the URL's database (not created here); ``redis=False``
    starts no Redis. Raises :class:`EmbeddedError`."""
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
