"""``roost run``, ``roost serve`` and ``roost worker``: the long-running processes."""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
from typing import Any

from app.cli.common import _migrate, _use
from app.cli.data import _load_graph, _seed
from app.embedded import services, spawn, stop_process
from app.settings import Settings

#: A query to paste into GraphiQL once the real graph is loaded.
EXAMPLE_QUERY = '{ user(username: "sd2494") { username followerCount followingCount } }'
#: ... and one to run after logging in as sd0 (its home feed, newest first).
FEED_QUERY = (
    "{ viewer { feed(first: 5) { edges { node { caption createdAt author { username } } } } } }"
)

#: Seconds the worker gets to finish its jobs after Ctrl-C before it is killed.
WORKER_STOP_TIMEOUT = 20.0


def _check_production(settings: Settings) -> None:
    """In production (ROOST_ENV=production) refuse to start embedded servers (Settings
    itself refuses the development JWT secret)."""
    if settings.env == "production" and not (settings.database_url and settings.redis_url):
        sys.exit(
            "roost: ROOST_ENV=production needs DATABASE_URL and REDIS_URL (no embedded servers)"
        )


def _run_worker(settings: Settings) -> None:
    from arq.connections import RedisSettings
    from arq.worker import run_worker

    from workers.settings import WorkerSettings

    assert settings.redis_url
    run_worker(WorkerSettings, redis_settings=RedisSettings.from_dsn(settings.redis_url))


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    """``roost worker``: run the arq worker until SIGINT/SIGTERM.

    In embedded mode it joins the servers of a running ``roost run`` (or starts its own)
    and migrates first, so it also works on its own.
    """
    _check_production(settings)
    embedded = not (settings.database_url and settings.redis_url)
    with services(settings, fresh=False) as urls:
        settings = _use(settings, urls)
        if embedded:
            _migrate(urls.database_url)
        _run_worker(settings)
    return 0


def _serve(settings: Settings, *, banner: str | None, workers: int = 1) -> None:
    """Serve ``app.asgi:create_app(settings)`` with uvicorn until SIGINT/SIGTERM; with
    ``workers`` > 1, uvicorn's supervisor runs that many processes on one socket, each
    building the app from the environment (``_use`` exported the URLs in use)."""
    import uvicorn

    from app.asgi import create_app

    if workers > 1:
        uvicorn.run(
            "app.asgi:create_app",
            factory=True,
            host=settings.host,
            port=settings.port,
            workers=workers,
            log_level="info",
            proxy_headers=True,
        )
        return

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and banner:
                print(banner, flush=True)

    config = uvicorn.Config(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level="info",
        proxy_headers=True,
    )
    Server(config).run()


def _banner(settings: Settings) -> str:
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    lines = [
        "",
        f"  Roost is up: open GraphiQL at http://{host}:{settings.port}/graphql",
        "  and paste:",
        f"    {EXAMPLE_QUERY}",
    ]
    if settings.env != "production":
        lines += [
            f"  Loaded users log in with the password {settings.dev_password!r}:",
            '    mutation { logIn(input: {username: "sd0", password: '
            f'"{settings.dev_password}"}}) {{ ... on LogInSuccess {{ accessToken }} }} }}',
            "  then, with the header Authorization: Bearer <accessToken>, sd0's home feed:",
            f"    {FEED_QUERY}",
        ]
    lines += ["  Ctrl-C stops the API, the worker and the embedded servers.", ""]
    return "\n".join(lines)


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    """``roost serve [--workers N]``: the API only, against an already migrated
    database, in N processes (every one serves any subscriber: events travel through
    Redis)."""
    _check_production(settings)
    with services(settings, fresh=False) as urls:
        _serve(_use(settings, urls), banner=None, workers=max(1, getattr(args, "workers", 1)))
    return 0


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    """``roost run``: everything a developer needs, from a fresh clone to GraphiQL.

    Starts the embedded servers for whatever is not configured, migrates, loads the real
    graph when the users table is empty and seeds ROOST_SEED_POSTS posts when there are
    none (unless --no-load), starts ``roost worker`` as a child (unless --no-worker) and
    serves the API. On exit (Ctrl-C, SIGTERM) it stops
    the API, then the worker, then the servers it started.
    """
    _check_production(settings)
    with services(settings, fresh=False) as urls:
        settings = _use(settings, urls)
        _migrate(urls.database_url)
        if not args.no_load:
            rc = asyncio.run(
                _load_graph(settings, urls.database_url, settings.graph_path, only_if_empty=True)
            )
            if rc:
                print("roost: continuing without the real graph", file=sys.stderr)
            elif settings.seed_posts:
                asyncio.run(
                    _seed(settings, urls.database_url, settings.seed_posts, quiet_if_present=True)
                )
        worker: subprocess.Popen[bytes] | None = None
        try:
            if not args.no_worker:
                worker = spawn([sys.executable, "-m", "app.cli", "worker"], env=dict(os.environ))
            _serve(settings, banner=_banner(settings))
        finally:
            if worker is not None:
                # SIGTERM (arq shuts down as on Ctrl-C, which may have reached it already),
                # then SIGKILL if it is still busy after WORKER_STOP_TIMEOUT s.
                stop_process(worker, timeout=WORKER_STOP_TIMEOUT)
    return 0
