"""``roost run``, ``roost serve`` and ``roost worker``: the long-running processes."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import threading
import time
from typing import Any

from app.cli.common import _migrate, _use
from app.cli.data import DataError, DataState, prepare_data
from app.embedded import services, spawn, stop_process
from app.settings import Settings

log = logging.getLogger("roost.cli")

#: A query to paste into GraphiQL once the real graph is loaded.
EXAMPLE_QUERY = '{ user(username: "sd2494") { username followerCount followingCount } }'
#: ... and one to run after logging in as sd0 (its home feed, newest first).
FEED_QUERY = (
    "{ viewer { feed(first: 5) { edges { node { caption createdAt author { username } } } } } }"
)

#: Seconds the worker gets to finish its jobs after Ctrl-C before it is killed.
WORKER_STOP_TIMEOUT = 20.0
#: Seconds ``roost run`` waits for the worker to fan out the seeded posts before the banner.
BANNER_WAIT_S = 60.0


def _check_production(settings: Settings) -> None:
    """In production refuse to start embedded servers."""
    if settings.env == "production" and not (settings.database_url and settings.redis_url):
        sys.exit(
            "roost: ROOST_ENV=production needs DATABASE_URL and REDIS_URL (no embedded servers)"
        )


#: The arq settings class ``roost worker`` runs (the worker's entry point).
WORKER_ENTRY_POINT = "workers.settings.WorkerSettings"

#: Seconds the worker waits before it starts its loop again after losing Redis.
WORKER_RESTART_DELAY_S = 1.0


def _run_worker(settings: Settings) -> None:
    """Run the arq worker until SIGINT, SIGTERM or SIGHUP, letting running jobs finish;
    losing Redis (also a ``WatchError`` mid-watch) restarts the loop in this process."""
    from arq.utils import import_string
    from arq.worker import create_worker
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError
    from redis.exceptions import WatchError

    # By its entry point's name, as `arq workers.settings.WorkerSettings` does: `app` is
    # below `workers` in the import layers (pyproject.toml) and never imports it.
    WorkerSettings = import_string(WORKER_ENTRY_POINT)

    assert settings.redis_url
    while True:
        worker = create_worker(WorkerSettings)
        worker.loop.add_signal_handler(signal.SIGHUP, worker.handle_sig, signal.SIGHUP)
        try:
            worker.run()
            return  # stopped by a signal
        except asyncio.CancelledError:
            # Stopped by a signal while a job ran: arq's close() re-raises the job's
            # cancellation; the job is run again by the next worker (its in-progress key).
            log.info("worker: stopped with a job cancelled mid-run")
            return
        except (RedisConnectionError, RedisTimeoutError, WatchError) as exc:
            log.warning(
                "worker: lost Redis (%r); starting the worker loop again in %.0f s",
                exc,
                WORKER_RESTART_DELAY_S,
            )
            time.sleep(WORKER_RESTART_DELAY_S)


def check_worker(settings: Settings, redis_url: str) -> int:
    """``roost worker --check``: 0 when this host's worker (WORKER_NAME) beat within
    WORKER_HEARTBEAT_MAX_AGE_S, else 1; one line on stdout says which."""
    from redis.asyncio import Redis

    from app.worker_health import liveness

    async def check() -> int:
        redis = Redis.from_url(redis_url, socket_timeout=5, socket_connect_timeout=5)
        try:
            alive = await liveness(
                redis, settings.arq_queue, settings.worker_heartbeat_max_age_s, settings.worker_name
            )
        except Exception as exc:  # Redis unreachable: not healthy either
            print(f"roost worker --check: Redis: {exc!r}", flush=True)
            return 1
        finally:
            await redis.aclose()
        print(f"roost worker --check: {'ok' if alive.ok else 'FAILED'}: {alive.message}")
        return 0 if alive.ok else 1

    return asyncio.run(check())


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    """``roost worker``: migrate, then run the arq worker until SIGINT/SIGTERM (embedded:
    on the servers of a running ``roost run``, or its own)."""
    if getattr(args, "check", False):
        if settings.redis_url:
            return check_worker(settings, settings.redis_url)
        with services(settings, fresh=False) as urls:
            assert urls.redis_url
            return check_worker(settings, urls.redis_url)
    _check_production(settings)
    embedded = not (settings.database_url and settings.redis_url)
    with services(settings, fresh=False) as urls:
        settings = _use(settings, urls)
        if embedded:
            _migrate(urls.database_url)
        _run_worker(settings)
    return 0


def api_workers(settings: Settings, requested: int | None) -> int:
    """How many API processes ``roost serve`` runs: ``--workers``, else API_WORKERS,
    else one per CPU this process may run on (one event loop uses one core)."""
    if requested is not None:
        return max(1, requested)
    if settings.api_workers is not None:
        return settings.api_workers
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


def _serve(
    settings: Settings,
    *,
    ready: Any = None,
    on_shutdown: Any = None,
    workers: int = 1,
    access_log: bool = True,
) -> None:
    """Serve ``app.asgi:create_app(settings)`` with uvicorn until SIGINT/SIGTERM/SIGHUP;
    ``ready`` runs once it listens; ``workers`` > 1 processes share one socket."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from app.asgi import create_app
    from app.http_server import server_config

    if settings.api_access_log is not None:
        access_log = settings.api_access_log
    if workers > 1:
        config = server_config(
            settings, "app.asgi:create_app", factory=True, workers=workers, access_log=access_log
        )
        Multiprocess(config, sockets=[config.bind_socket()]).run()
        return

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and ready is not None:
                self._ready_task = asyncio.create_task(ready())

        async def shutdown(self, sockets: Any = None) -> None:
            if on_shutdown is not None:
                on_shutdown()
            task = getattr(self, "_ready_task", None)
            if task is not None:
                task.cancel()
            await super().shutdown(sockets=sockets)

    server = Server(server_config(settings, create_app(settings), access_log=access_log))

    # Closing the terminal stops it like Ctrl-C (uvicorn handles SIGINT and SIGTERM only).
    def on_hangup(*_: object) -> None:
        server.should_exit = True

    previous = signal.signal(signal.SIGHUP, on_hangup)
    try:
        server.run()
    finally:
        signal.signal(signal.SIGHUP, previous)


DEVELOPMENT_SERVER = [
    "  This is a development server: one API process, an access line per request.",
    "  To serve at full speed (one API process per CPU, no access log), run",
    "  `roost serve` (and `roost worker`) on the same DATABASE_URL and REDIS_URL.",
]


def mail_lines(settings: Settings) -> list[str]:
    """What the banner says of e-mail: where it goes, or plainly that it is not sent."""
    if settings.smtp_url:
        from adapters.mail import SmtpConfig

        smtp = SmtpConfig.from_url(settings.smtp_url, settings.mail_from)
        scheme = "smtps" if smtp.tls else "smtp"
        return [f"  E-mail goes out through {scheme}://{smtp.host}:{smtp.port} (the worker)."]
    return [
        "  E-mail is NOT sent (no SMTP_URL): the worker logs each mail instead, verification",
        "  and password reset codes included. `docker compose up mailpit` and",
        "  SMTP_URL=smtp://127.0.0.1:1025 catch them at http://127.0.0.1:8025.",
    ]


def _banner(settings: Settings, data: DataState | None = None, worker_note: str = "") -> str:
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    lines = [
        "",
        f"  Roost is up: open GraphiQL at http://{host}:{settings.port}/graphql",
    ]
    if data is not None and data.graph is None:
        lines += [
            "  The database holds no sample data (--no-load): the sample queries below",
            "  return nothing until `roost load-graph` loads the real graph.",
        ]
    lines += ["  and run the sample query it opens with:", f"    {EXAMPLE_QUERY}"]
    if settings.env != "production":
        lines += [
            f"  Loaded users log in with the password {settings.dev_password!r}:",
            '    mutation { logIn(input: {username: "sd0", password: '
            f'"{settings.dev_password}"}}) {{ ... on LogInSuccess {{ accessToken }} }} }}',
            "  then, with the header Authorization: Bearer <accessToken>, sd0's home feed:",
            f"    {FEED_QUERY}",
        ]
    if worker_note:
        lines.append(f"  {worker_note}")
    lines += mail_lines(settings)
    lines += DEVELOPMENT_SERVER
    lines += ["  Ctrl-C stops the API, the worker and the embedded servers.", ""]
    return "\n".join(lines)


class Supervised:
    """A child process (``roost run``'s worker) started again, 1 s after it died and
    up to 30 s apart when it keeps dying, unless it exited as asked (0 after a signal,
    130 after Ctrl-C) or :meth:`stop_watching` / :meth:`stop` was called."""

    def __init__(self, cmd: list[str], name: str) -> None:
        self.cmd, self.name = cmd, name
        self.proc = spawn(cmd, env=dict(os.environ))
        self._stopping = threading.Event()
        threading.Thread(target=self._watch, name=f"supervise-{name}", daemon=True).start()

    def poll(self) -> int | None:
        return self.proc.poll()

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def _watch(self) -> None:
        delay = 1.0
        while not self._stopping.wait(1.0):
            code = self.proc.poll()
            if code is None:
                continue
            if code in (0, 130):
                return  # it was asked to stop
            log.warning("%s exited (code %s); starting it again in %.0f s", self.name, code, delay)
            if self._stopping.wait(delay):
                return
            self.proc = spawn(self.cmd, env=dict(os.environ))
            delay = min(delay * 2, 30.0)

    def stop_watching(self) -> None:
        self._stopping.set()

    def stop(self, *, timeout: float) -> int | None:
        self._stopping.set()
        return stop_process(self.proc, timeout=timeout)


async def _wait_for_worker(settings: Settings, worker: Supervised | None, deadline_s: float) -> str:
    """Wait at most ``deadline_s`` for the worker's heartbeat and an empty outbox; the
    banner's note when either is missing ("" when all is well)."""
    if worker is None:
        return "No worker (--no-worker): posts are not fanned out until `roost worker` runs."
    from redis.asyncio import Redis
    from sqlalchemy import text

    from app.database import create_engine
    from app.worker_health import liveness

    redis = Redis.from_url(settings.redis_url) if settings.redis_url else None
    engine = create_engine(str(settings.database_url), pool_size=1, max_overflow=0)
    deadline = time.monotonic() + deadline_s
    try:
        while time.monotonic() < deadline:
            if worker.poll() is not None:
                return f"The worker exited (code {worker.returncode}): see its log above."
            try:
                up = (
                    redis is None
                    or (
                        await liveness(
                            redis,
                            settings.arq_queue,
                            settings.worker_heartbeat_max_age_s,
                            settings.worker_name,
                        )
                    ).ok
                )
                async with engine.connect() as conn:
                    backlog = await conn.scalar(
                        text("SELECT count(*) FROM outbox WHERE dispatched_at IS NULL")
                    )
            except Exception:  # a server restarting: try again
                up, backlog = False, None
            if up and backlog == 0:
                return ""
            await asyncio.sleep(0.25)
        return "The worker is still busy with the outbox (see /metrics); the API is ready."
    finally:
        await engine.dispose()
        if redis is not None:
            await redis.aclose()


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    """``roost serve [--workers N]``: the API only, on a migrated database."""
    _check_production(settings)
    workers = api_workers(settings, getattr(args, "workers", None))
    with services(settings, fresh=False) as urls:
        _serve(_use(settings, urls), workers=workers, access_log=False)
    return 0


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    """``roost run`` (docs/operations/running.md): embedded servers, migrations, the
    first load and seed, the worker as a child and the API, then the banner; stops them
    in reverse order on exit. Exits 1 before serving when the graph cannot be read."""
    _check_production(settings)
    with services(settings, fresh=False) as urls:
        settings = _use(settings, urls)
        _migrate(urls.database_url)
        try:
            data = asyncio.run(prepare_data(settings, urls.database_url, load=not args.no_load))
        except DataError as exc:
            print(exc, file=sys.stderr, flush=True)
            return 1
        worker: Supervised | None = None
        try:
            if not args.no_worker:
                worker = Supervised([sys.executable, "-m", "app.cli", "worker"], "worker")

            async def ready() -> None:
                note = await _wait_for_worker(settings, worker, BANNER_WAIT_S)
                print(_banner(settings, data, note), flush=True)

            _serve(settings, ready=ready, on_shutdown=worker.stop_watching if worker else None)
        finally:
            if worker is not None:
                # SIGTERM, then SIGKILL if still busy after WORKER_STOP_TIMEOUT s.
                worker.stop(timeout=WORKER_STOP_TIMEOUT)
    return 0
