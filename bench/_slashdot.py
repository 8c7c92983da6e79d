"""The prepared database of ``bench.feed_vs_postgraphile``: the real Slashdot graph and
seeded posts, loaded through Roost's own CLI, optionally kept between runs; and the
viewers picked from it.

Loading takes about a minute and a half here (``roost load-graph`` ~55 s, ``roost
seed-posts`` ~20 s, the worker's fan-out of the live tail, VACUUM ANALYZE), so a
database named by ``--keep-db`` is kept and reused. A ``pgbench.prepared`` row
records what it was prepared from (graph file name and size, post count); a kept
database with another record, or none (an interrupted load), is dropped and made again.
Kept databases must be named ``roost_bench_*``, so the bench never drops anything else.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import asyncpg
from sqlalchemy.engine import make_url

from app.embedded import spawn, stop_process
from app.migrate import upgrade
from bench._support import admin, bench_parser, throwaway_database
from domain.visibility.predicates import is_active, is_live

#: Names ``--keep-db`` accepts.
KEEP_DB_NAME = re.compile(r"^roost_bench_[a-z0-9_]{1,40}$")
#: Feed page size of the bench.
PAGE = 20


def dsn(url: str) -> str:
    """``url`` as a plain ``postgresql://`` DSN (asyncpg, node)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def fetch(url: str, sql: str, *args: object) -> list[asyncpg.Record]:
    """Run one statement on its own connection; return its rows."""
    conn = await asyncpg.connect(dsn(url))
    try:
        return await conn.fetch(sql, *args)
    finally:
        await conn.close()


async def execute(url: str, script: str) -> None:
    """Run a script (several statements, no parameters) in autocommit."""
    conn = await asyncpg.connect(dsn(url))
    try:
        await conn.execute(script)
    finally:
        await conn.close()


def marker_of(graph: Path, posts: int) -> str:
    """What a prepared database records: the graph file's name and size, the posts."""
    return f"{graph.name} ({graph.stat().st_size:,} bytes), {posts:,} posts"


async def _prepared_as(url: str) -> str | None:
    rows = await fetch(url, "SELECT to_regclass('pgbench.prepared') IS NOT NULL AS ok")
    if not rows[0]["ok"]:
        return None
    rows = await fetch(url, "SELECT marker FROM pgbench.prepared")
    return rows[0]["marker"] if rows else None


@contextlib.contextmanager
def bench_database(server_url: str, keep: str | None, marker: str) -> Iterator[tuple[str, bool]]:
    """Yield (database URL, already prepared from ``marker``?).

    Without ``keep``: a throwaway database (created, migrated, dropped at the end).
    With ``keep`` (a ``roost_bench_*`` name): that database, created if missing,
    dropped and created again if it was prepared from something else or not
    completely, migrated to head, and kept at the end. Raises ValueError for another
    name."""
    if keep is None:
        with throwaway_database(server_url) as url:
            yield url, False
        return
    if not KEEP_DB_NAME.match(keep):
        raise ValueError(f"a kept database must be named roost_bench_*, not {keep!r}")
    url = make_url(server_url).set(database=keep).render_as_string(hide_password=False)
    (exists,) = asyncio.run(
        admin(server_url, f"SELECT 1 FROM pg_database WHERE datname = '{keep}'")
    )
    prepared = asyncio.run(_prepared_as(url)) if exists else None
    if exists and prepared != marker:
        print(f"database {keep} was prepared from {prepared!r}, not {marker!r}: making it again")
        asyncio.run(admin(server_url, f'DROP DATABASE "{keep}" WITH (FORCE)'))
    if not exists or prepared != marker:
        asyncio.run(admin(server_url, f'CREATE DATABASE "{keep}"'))
    upgrade(url)
    yield url, prepared == marker


def prepare(
    url: str, env: dict[str, str], graph: Path, posts: int, marker: str, logs: Path
) -> None:
    """Fill the database as Roost's CLI does, with ``env`` naming it and the Redis:
    ``roost load-graph GRAPH``, ``roost seed-posts --count POSTS`` (bulk history, warm
    feeds, a live tail published through create_post), then ``roost worker`` until the
    outbox is drained (the live tail fanned out); then VACUUM ANALYZE (month-old posts
    are vacuumed in production) and the marker row. Raises RuntimeError or
    CalledProcessError when a step fails."""
    t0 = time.monotonic()
    for cmd in (["load-graph", str(graph)], ["seed-posts", "--count", str(posts)]):
        print(f"$ roost {' '.join(cmd)}", flush=True)
        subprocess.run([sys.executable, "-m", "app.cli", *cmd], env=env, check=True)
    print("$ roost worker (until the outbox is drained)", flush=True)
    with open(logs / "worker.log", "ab") as out:
        worker = spawn([sys.executable, "-m", "app.cli", "worker"], env=env, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 600
        while True:
            (row,) = asyncio.run(
                fetch(
                    url,
                    "SELECT (SELECT count(*) FROM outbox WHERE dispatched_at IS NULL) AS pending,"
                    " (SELECT count(*) FROM dead_letters) AS dead",
                )
            )
            if row["pending"] == 0:
                break
            if worker.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"roost worker left {row['pending']} events; see {logs}")
            time.sleep(0.5)
    finally:
        stop_process(worker, timeout=20)
    print(f"outbox drained ({row['dead']} dead letters)", flush=True)
    asyncio.run(execute(url, "VACUUM (ANALYZE)"))
    asyncio.run(
        execute(
            url,
            "CREATE SCHEMA IF NOT EXISTS pgbench; DROP TABLE IF EXISTS pgbench.prepared;"
            " CREATE TABLE pgbench.prepared (marker text NOT NULL, at timestamptz NOT NULL);",
        )
    )
    asyncio.run(fetch(url, "INSERT INTO pgbench.prepared VALUES ($1, now())", marker))
    print(f"database prepared in {time.monotonic() - t0:.0f} s", flush=True)


@dataclass(frozen=True)
class Viewer:
    """A viewer of the sweep: username, live followees, and an access token."""

    username: str
    followees: int
    token: str = ""


_FEED_SIZE = f"""
    SELECT count(*) FROM (
        SELECT 1 FROM posts p WHERE {is_live("p")}
          AND (p.author_id = $1 OR p.author_id IN (
              SELECT followee_id FROM follows WHERE follower_id = $1 AND {is_live()}))
        LIMIT $2) t
"""
_NAMED = f"""
    SELECT u.id, (SELECT count(*) FROM follows f
                  WHERE f.follower_id = u.id AND {is_live("f")}) AS n
    FROM users u WHERE u.username = $1
"""
_NEAR = f"""
    SELECT u.id, u.username, c.n
    FROM (SELECT follower_id, count(*) AS n FROM follows WHERE {is_live()}
          GROUP BY follower_id) c
    JOIN users u ON u.id = c.follower_id AND {is_active("u")}
    WHERE c.n BETWEEN $1 AND $2
    ORDER BY abs(c.n - $3), length(u.username), u.username
    LIMIT 200
"""


async def pick_viewers(url: str, names: Sequence[str], sweep: Sequence[int]) -> list[Viewer]:
    """The ``names`` and, for each ``sweep`` target, the active user whose followee count
    is nearest to it (then the shortest, lowest name) with more than two pages of feed;
    sorted by followees. Raises RuntimeError when a name is missing or a target has no
    such user."""
    conn = await asyncpg.connect(dsn(url))
    try:
        out: dict[str, Viewer] = {}
        for name in names:
            row = await conn.fetchrow(_NAMED, name)
            if row is None:
                raise RuntimeError(f"no user {name} in the database (another graph?)")
            out[name] = Viewer(name, row["n"])
        for target in sweep:
            near = await conn.fetch(_NEAR, int(target * 0.8), int(target * 1.2) + 1, target)
            for c in near:
                if await conn.fetchval(_FEED_SIZE, c["id"], 2 * PAGE + 1) > 2 * PAGE:
                    out.setdefault(c["username"], Viewer(c["username"], c["n"]))
                    break
            else:
                raise RuntimeError(f"no active user follows about {target} accounts")
    finally:
        await conn.close()
    return sorted(out.values(), key=lambda v: v.followees)


def in_process_args(
    name: str,
    doc: str | None,
    viewers: Sequence[str],
    argv: Sequence[str] | None,
    extra: dict[str, int] | None = None,
) -> argparse.Namespace:
    """The command line of a bench that drives ``create_app`` in process over a
    prepared database: ``--db`` (default BENCH_DB; required), ``--viewers``,
    ``--requests`` and ``--warmup`` (requests per viewer, measured and not),
    ``--redis-server``, and one integer option per ``extra`` name (its default)."""
    p = bench_parser(name, doc)
    p.add_argument("--db", default=os.environ.get("BENCH_DB"), help="a prepared database URL")
    p.add_argument("--viewers", nargs="+", default=list(viewers))
    p.add_argument("--requests", type=int, default=300)
    p.add_argument("--warmup", type=int, default=30)
    for option, default in (extra or {}).items():
        p.add_argument(f"--{option}", type=int, default=default)
    p.add_argument("--redis-server", default=None)
    args = p.parse_args(argv)
    if not args.db:
        p.error("--db (a database prepared by bench.feed_vs_postgraphile --keep-db) is needed")
    return args
