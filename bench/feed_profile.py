"""Where the API's CPU goes on a home-feed request: a py-spy profile split by phase.

Runs one Roost API process (``roost serve --workers 1``) over the same database as
``bench.feed_vs_postgraphile`` (the real Slashdot graph and 200,000 seeded posts, kept
with ``--keep-db``), loads it with wrk (the feed of each viewer, and ``{ __typename }``),
samples the API process with py-spy (``--native``, so the cycle collector shows) and
prints, per scenario, the API's CPU per request and its split by phase:

- ``http``: uvicorn, starlette, httptools/h11 and Roost's HTTP guards (``app/``);
- ``auth``: JWT decoding and the session check;
- ``parse`` / ``validate`` / ``execute``: graphql-core's three steps (``execute``
  includes Roost's planned execution, app/execution_plan.py);
- ``strawberry``: Strawberry's schema, extensions and field wrappers;
- ``dataloader``: aiodataloader;
- ``resolvers``: Roost's own ``schema/``, ``resolvers/`` and ``domain/`` code;
- ``sqlalchemy`` / ``asyncpg`` / ``redis``: the drivers and the SQL toolkit;
- ``json``: encoding the response (json, orjson);
- ``gc``: the cycle garbage collector (native frames ``gc_collect_*``);
- ``event loop``: asyncio/uvloop scheduling; ``other``: the rest.

A sample counts for the innermost frame that matches a phase (a resolver waiting in
SQLAlchemy counts as ``sqlalchemy``), except ``gc``, which wins wherever it appears.
Each phase's ms per request is its share of samples times the process's CPU per request
(psutil over the same window), so the split adds up to the measured CPU.

Usage::

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
        python -m bench.feed_profile --keep-db roost_bench_slashdot [--seconds 10]
            [--clients 32] [--viewers sd195,sd2494]

Requires wrk (Debian package) and py-spy (the ``bench`` extra); py-spy needs ptrace
rights over the child (root, or ``kernel.yama.ptrace_scope=0``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import psutil

from app.settings import Settings
from bench._slashdot import bench_database, marker_of, pick_viewers, prepare
from bench._support import bench_output, dedicated_redis, exit_with, postgres_server, run_wrk, table
from bench.feed_vs_postgraphile import TYPENAME, log_in, roost_env, roost_feed_query, roost_process


def _py_spy() -> str | None:
    """The py-spy executable: beside this interpreter (the venv) or on PATH."""
    near = Path(sys.executable).parent / "py-spy"
    return str(near) if near.exists() else shutil.which("py-spy")


PHASES = (
    "gc", "json", "asyncpg", "sqlalchemy", "redis", "dataloader", "parse", "validate",
    "execute", "strawberry", "auth", "resolvers", "http", "event loop", "other",
)  # fmt: skip

# (phase, prefixes of a Python frame's file as py-spy prints it, relative to sys.path),
# tried in this order on each frame from the innermost out.
_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("json", ("json/", "orjson")),
    ("asyncpg", ("asyncpg/",)),
    ("sqlalchemy", ("sqlalchemy/",)),
    ("redis", ("redis/", "hiredis")),
    ("dataloader", ("aiodataloader",)),
    ("parse", ("graphql/language/",)),
    ("validate", ("graphql/validation/",)),
    ("execute", ("graphql/", "app/execution_plan")),
    ("strawberry", ("strawberry/",)),
    ("auth", ("jwt/", "app/sessions", "domain/identity/")),
    ("resolvers", ("schema/", "resolvers/", "domain/")),
    ("http", ("uvicorn/", "starlette/", "httptools", "h11/", "app/")),
    ("event loop", ("asyncio/", "uvloop/", "selectors.py")),
)
_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")


def phase_of(stack: Sequence[str]) -> str | None:
    """The phase of one sampled stack (outermost frame first), or None for a sample of
    an idle loop (``epoll_wait``) or of another thread than the event loop's.

    ``gc`` if any frame is the cycle collector; else the first rule that matches a
    Python frame, innermost first (native frames, such as a ``write`` system call,
    count for the Python code that made them); ``event loop`` when only uvloop's own C
    code runs; ``other`` when nothing matches."""
    if any("Thread._bootstrap" in f for f in stack) or "epoll_wait" in stack[-1]:
        return None
    if any("gc_collect" in f for f in stack):
        return "gc"
    for frame in reversed(stack):
        m = _FRAME.match(frame)
        if m is None:
            continue
        file = m["file"]
        if file.endswith((".c", ".h", ".so", ".pyx")) or ".so." in file:
            if "orjson" in file:
                return "json"
            continue  # native: counts for the Python frame that called it
        for phase, prefixes in _RULES:
            if file.startswith(prefixes):
                return phase
    if any("(loop.c:" in f for f in stack):
        return "event loop"
    return "other"


def split(raw: str) -> Counter[str]:
    """Busy samples per phase from py-spy's ``--format raw`` output (collapsed stacks:
    ``frame;frame;... count`` per line)."""
    counts: Counter[str] = Counter()
    for line in raw.splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        phase = phase_of(stack.split(";"))
        if phase is not None:
            counts[phase] += int(n)
    return counts


def profile(
    pid: int,
    url: str,
    body: bytes,
    token: str | None,
    expect: str,
    seconds: int,
    clients: int,
    keep: Path | None = None,
) -> tuple[float, float, Counter[str]]:
    """Load ``url`` for ``seconds`` while py-spy samples ``pid``; return (requests per
    second, API CPU ms per request, samples per phase). ``keep``: where to write
    py-spy's raw samples (collapsed stacks) too."""
    proc = psutil.Process(pid)
    with tempfile.NamedTemporaryFile(suffix=".txt", delete=False) as out:
        path = out.name
    spy = subprocess.Popen(
        [_py_spy() or "py-spy", "record", "--pid", str(pid), "--native",
         "--rate", "100", "--format", "raw", "--duration", str(seconds + 1), "--output", path],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    time.sleep(0.5)  # py-spy attaches; the window below is measured on its own
    t0 = proc.cpu_times()
    got = run_wrk(
        url, body, seconds=seconds, clients=clients, expect=expect, expect_count=1,
        authorization=f"Bearer {token}" if token else None,
    )  # fmt: skip
    t1 = proc.cpu_times()
    spy.wait(timeout=seconds + 60)
    raw = Path(path).read_text(errors="replace")
    os.unlink(path)
    if keep is not None:
        keep.write_text(raw)
    cpu = (t1.user - t0.user) + (t1.system - t0.system)
    if got.bad or not got.requests:
        raise AssertionError(f"{got.bad} bad answers of {got.requests}: {got.bad_sample}")
    return got.rps, 1000 * cpu / got.requests, split(raw)


def run(args: argparse.Namespace, url: str, redis_url: str, logs: Path) -> None:
    """Start one API process and profile each scenario."""
    settings = Settings()
    viewers = asyncio.run(pick_viewers(url, args.viewers.split(","), ()))
    with roost_process(url, redis_url, 1, logs / "roost.log") as (gql, root, how):
        workers = [p for p in root.children(recursive=True) if "python" in p.name()] or [root]
        api = max(workers, key=lambda p: p.memory_info().rss)
        print(f"Roost: {how}; profiling pid {api.pid}")
        scenarios = [
            (f"feed {v.username} ({v.followees:,})", roost_feed_query(20),
             log_in(gql, v.username, settings.dev_password), '"hasNextPage"')
            for v in viewers
        ] + [("{ __typename }", TYPENAME, None, '"__typename"')]  # fmt: skip
        columns: list[tuple[str, float, Counter[str]]] = []
        for name, query, token, expect in scenarios:
            body = json.dumps({"query": query}).encode()
            auth = f"Bearer {token}" if token else None
            run_wrk(
                gql,
                body,
                seconds=2,
                clients=args.clients,
                expect=expect,
                expect_count=1,
                authorization=auth,
            )  # fmt: skip  (warm-up)
            keep = None
            if args.raw:
                args.raw.mkdir(parents=True, exist_ok=True)
                keep = args.raw / (re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") + ".txt")
            rps, ms, counts = profile(
                api.pid, gql, body, token, expect, args.seconds, args.clients, keep
            )
            print(f"{name}: {rps:,.0f} req/s, API CPU {ms:.2f} ms/request, "
                  f"{sum(counts.values())} samples")  # fmt: skip
            columns.append((name, ms, counts))
        print()
        print("API CPU per request (ms) by phase (share of samples):")
        rows = [["total"] + [f"{ms:.2f}" for _, ms, _ in columns]]
        for phase in PHASES:
            row = [phase]
            for _, ms, counts in columns:
                share = counts[phase] / (sum(counts.values()) or 1)
                row.append(f"{ms * share:.2f} ({100 * share:.0f}%)")
            rows.append(row)
        print(table(["phase", *(name for name, _, _ in columns)], rows))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--keep-db", metavar="NAME", help="kept database (roost_bench_*) to reuse")
    p.add_argument("--seconds", type=int, default=10, help="seconds profiled per scenario")
    p.add_argument("--clients", type=int, default=32, help="wrk connections (32)")
    p.add_argument("--viewers", default="sd195,sd2494", help="comma-separated usernames")
    p.add_argument("--posts", type=int, default=200_000, help="posts to seed (200,000)")
    p.add_argument("--graph", type=Path, default=Settings().graph_path)
    p.add_argument(
        "--raw", type=Path, help="a folder for py-spy's raw samples, one file per scenario"
    )
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; what it prints also goes to bench/results/feed_profile.txt."""
    args = parse_args(argv)
    if shutil.which("wrk") is None or _py_spy() is None:
        print("needs wrk (apt-get install wrk) and py-spy (pip install py-spy)", file=sys.stderr)
        return 2
    with bench_output("feed_profile", "feed_profile: API CPU per request by phase"):
        print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} at the start")
        marker = marker_of(args.graph, args.posts)
        with (
            tempfile.TemporaryDirectory(prefix="roost-bench-profile-") as tmp,
            postgres_server() as server,
            bench_database(server, args.keep_db, marker) as (url, prepared),
            dedicated_redis() as redis_url,
        ):
            if not prepared:
                prepare(url, roost_env(url, redis_url), args.graph, args.posts, marker, Path(tmp))
            run(args, url, redis_url, Path(tmp))
        print(f"load at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    exit_with(main)
