"""``roost backup`` and ``roost restore``: the database to a file and back
(app/backup.py)."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import sys
import time
from pathlib import Path

from app.backup import BackupError, backup, restore
from app.embedded import ensure_database, services
from app.settings import Settings


def _default_path() -> Path:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return Path(f"roost-{stamp}.dump")


def cmd_backup(args: argparse.Namespace, settings: Settings) -> int:
    """``roost backup [PATH]``: the database into PATH (pg_dump custom format; default
    ``roost-<UTC time>.dump``); exit 1 with the reason on failure."""
    path = Path(args.path) if args.path else _default_path()
    with services(settings, fresh=False, redis=False) as urls:
        t0 = time.monotonic()
        try:
            backup(urls.database_url, path)
        except BackupError as exc:
            print(f"roost backup: {exc}", file=sys.stderr)
            return 1
    size = path.stat().st_size
    print(f"backed up the database into {path} ({size:,} bytes) in {time.monotonic() - t0:.1f} s")
    return 0


def cmd_restore(args: argparse.Namespace, settings: Settings) -> int:
    """``roost restore PATH [--clean]``: the backup into the database (created if missing;
    empty unless --clean), in one transaction."""
    with services(settings, fresh=False, redis=False) as urls:
        t0 = time.monotonic()
        try:
            asyncio.run(ensure_database(urls.database_url))
            restore(urls.database_url, Path(args.path), clean=args.clean)
        except BackupError as exc:
            print(f"roost restore: {exc}", file=sys.stderr)
            return 1
    print(
        f"restored {args.path} in {time.monotonic() - t0:.1f} s; Redis holds caches only:"
        " feeds are rebuilt from PostgreSQL on their next read (flush Roost's Redis if"
        " it served a newer copy of this database)"
    )
    return 0
