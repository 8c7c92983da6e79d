"""``python -m bench.request_cost``: the fixed cost of a request, through a real uvicorn.

``{ __typename }`` touches no table: what it costs is what every request pays before
and after its resolvers (HTTP parsing, the edge middleware, the guards, the session
check, parsing and validation, the GraphQL machinery, JSON). Each server below runs
under uvicorn (uvloop, httptools) with ``--workers`` processes (default 2, one per core
of the bench machine) and is driven by wrk with ``--clients`` keep-alive connections:

- ``null``: an ASGI app that answers a fixed body (uvicorn's own floor);
- ``strawberry``: a minimal Starlette + Strawberry app (one field, Strawberry's parser
  and validation caches): what a generic Python GraphQL server costs;
- ``roost anon``: ``roost serve`` (rate limits on, budget lifted so they never refuse),
  ``{ __typename }`` without a token;
- ``roost auth``: the same with a signed-in user's ``Authorization: Bearer`` token
  (JWT verification and the session check, Redis).

It prints, per server, the medians over ``--rounds`` interleaved rounds of req/s, p50
and p99 latency, the CPU µs per request of the server's processes (uvicorn's
supervisor and workers) and of Redis, and the ratios against ``strawberry`` and
``null``. CPU per request is the steadier figure on a shared machine; req/s depends on
what else runs (wrk itself uses a share of the cores: its CPU is printed too).

PostgreSQL: ``DATABASE_URL`` names a server (a throwaway database is created, migrated
and dropped), else an embedded one is started; Redis is the bench's own
``redis-server``.

Usage::

    python -m bench.request_cost [--seconds 5] [--rounds 3] [--clients 32]
        [--workers 2] [--warmup 2]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil

from app.embedded import _free_port, spawn, stop_process
from bench._support import (
    CpuMeter,
    WrkResult,
    bench_output,
    dedicated_redis,
    exit_with,
    graphql_answers,
    postgres_server,
    process_tree,
    run_wrk,
    table,
    throwaway_database,
    wait_answering,
)
from bench.feed_vs_postgraphile import _redis_process, roost_process

TYPENAME = json.dumps({"query": "{ __typename }"}).encode()
USERNAME = "bench_cost"
PASSWORD = "bench-password-1"
NULL_BODY = b'{"data":{"__typename":"Query"}}'


# ------------------------------------------------------------------ baseline servers


async def null_app(scope, receive, send) -> None:
    """The cheapest ASGI app: a fixed JSON body (``uvicorn bench.request_cost:null_app``)."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    more = True
    while more:
        more = (await receive()).get("more_body", False)
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(NULL_BODY)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": NULL_BODY})


def strawberry_app():
    """A minimal Starlette + Strawberry app with Strawberry's parser and validation
    caches (``uvicorn --factory bench.request_cost:strawberry_app``)."""
    import strawberry
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from strawberry.asgi import GraphQL
    from strawberry.extensions import ParserCache, ValidationCache

    @strawberry.type
    class Query:
        hello: str = "world"

    schema = strawberry.Schema(query=Query, extensions=[ParserCache(), ValidationCache()])

    async def healthz(_):
        return PlainTextResponse("ok")

    return Starlette(
        routes=[
            Route("/graphql", GraphQL(schema, graphql_ide=None), methods=["GET", "POST"]),
            Route("/healthz", healthz),
        ]
    )


@contextlib.contextmanager
def uvicorn_process(
    app: str, workers: int, log: Path, factory: bool
) -> Iterator[tuple[str, psutil.Process]]:
    """``uvicorn <app>`` on a free port (as ``roost serve`` runs it: uvloop, httptools,
    no access log); yield (the /graphql URL, the root process) once it answers."""
    port = _free_port()
    cmd = [
        sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port),
        "--workers", str(workers), "--no-access-log", "--log-level", "warning",
    ] + (["--factory"] if factory else [])  # fmt: skip
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    )
    with open(log, "ab") as out:
        proc = spawn(cmd, env=env, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}/graphql"
    try:
        wait_answering(proc, graphql_answers(url), name=app, timeout=30, log=log)
        time.sleep(0.5 * workers)  # every worker up
        yield url, psutil.Process(proc.pid)
    finally:
        stop_process(proc, timeout=20)


def sign_up(graphql_url: str) -> str:
    """An access token of a new user (``signUp``)."""
    mutation = (
        "mutation($i: SignUpInput!) { signUp(input: $i) {"
        " ... on SignUpSuccess { accessToken } ... on Error { code message } } }"
    )
    variables = {
        "i": {
            "username": USERNAME,
            "email": f"{USERNAME}@example.com",
            "password": PASSWORD,
            "displayName": "Bench",
        }
    }
    r = httpx.post(graphql_url, json={"query": mutation, "variables": variables}, timeout=30)
    got = r.json()["data"]["signUp"]
    if "accessToken" not in got:
        raise RuntimeError(f"signUp failed: {got}")
    return got["accessToken"]


# ----------------------------------------------------------------------- measuring


@dataclass
class Target:
    """One server and request under test."""

    name: str
    url: str
    root: psutil.Process
    redis: psutil.Process | None
    token: str | None = None


@dataclass
class Sample:
    """One wrk run against a target, with the CPU its processes used meanwhile."""

    wrk: WrkResult
    app_cpu: float
    redis_cpu: float

    def us(self, cpu: float) -> float:
        return 1e6 * cpu / max(1, self.wrk.requests)


def measure(t: Target, seconds: float, clients: int) -> Sample:
    """Drive ``t`` with wrk for ``seconds``; the CPU of its process tree and of Redis."""
    groups = {"app": lambda: process_tree(t.root)}
    if t.redis is not None:
        groups["redis"] = lambda: [t.redis]
    meter = CpuMeter(groups)
    meter.start()
    try:
        result = run_wrk(
            t.url,
            TYPENAME,
            seconds=seconds,
            clients=clients,
            expect='"__typename"',
            expect_count=1,
            authorization=f"Bearer {t.token}" if t.token else None,
        )
    finally:
        cpu = meter.stop()
    if result.bad or result.socket_errors:
        raise RuntimeError(f"{t.name}: {result.bad} bad answers ({result.bad_sample})")
    return Sample(result, sum(cpu["app"].values()), sum(cpu.get("redis", {}).values()))


def report(samples: dict[str, list[Sample]]) -> None:
    """The medians per target, and the ratios against ``strawberry`` and ``null``."""
    med = {
        name: {
            "rps": statistics.median(s.wrk.rps for s in ss),
            "p50": statistics.median(s.wrk.p50 for s in ss),
            "p99": statistics.median(s.wrk.p99 for s in ss),
            "app": statistics.median(s.us(s.app_cpu) for s in ss),
            "redis": statistics.median(s.us(s.redis_cpu) for s in ss),
            "wrk": statistics.median(s.us(s.wrk.client_cpu) for s in ss),
        }
        for name, ss in samples.items()
    }
    rows = []
    for name, m in med.items():
        rows.append(
            (
                name,
                f"{m['rps']:,.0f}",
                f"{m['p50'] * 1e3:.2f}",
                f"{m['p99'] * 1e3:.2f}",
                f"{m['app']:.0f}",
                f"{m['redis']:.0f}",
                f"{m['wrk']:.0f}",
                f"{m['rps'] / med['strawberry']['rps']:.2f}x",
                f"{m['app'] / med['strawberry']['app']:.2f}x",
                f"{m['app'] - med['null']['app']:+.0f}",
            )
        )
    print(
        table(
            (
                "server",
                "req/s",
                "p50 ms",
                "p99 ms",
                "server CPU µs/req",
                "redis µs/req",
                "wrk µs/req",
                "req/s vs strawberry",
                "CPU vs strawberry",
                "CPU over null µs",
            ),
            rows,
        )
    )
    anon = med["roost anon"]
    print(
        f"goal: {{ __typename }} >= 3,000 req/s: roost anon {anon['rps']:,.0f}"
        f" ({'met' if anon['rps'] >= 3000 else 'NOT met'});"
        f" fixed cost over uvicorn's floor: {anon['app'] - med['null']['app']:.0f} µs"
        f" per request per process (anon), {med['roost auth']['app'] - med['null']['app']:.0f}"
        " µs (auth)"
    )


def run_bench(args: argparse.Namespace, url: str, redis_url: str, logs: Path) -> None:
    """Start the servers, measure them in interleaved rounds, print the report."""
    redis_root, _ = _redis_process(redis_url)
    with (
        uvicorn_process("bench.request_cost:null_app", args.workers, logs / "null.log", False) as (
            n_url,
            n_root,
        ),
        uvicorn_process(
            "bench.request_cost:strawberry_app", args.workers, logs / "strawberry.log", True
        ) as (s_url, s_root),
        roost_process(url, redis_url, args.workers, logs / "roost.log") as (r_url, r_root, how),
    ):
        token = sign_up(r_url)
        print(f"Roost: {how}; {psutil.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at start")
        targets = [
            Target("null", n_url, n_root, None),
            Target("strawberry", s_url, s_root, None),
            Target("roost anon", r_url, r_root, redis_root),
            Target("roost auth", r_url, r_root, redis_root, token),
        ]
        for t in targets:  # warm-up
            measure(t, args.warmup, args.clients)
        samples: dict[str, list[Sample]] = {t.name: [] for t in targets}
        for rnd in range(1, args.rounds + 1):
            for t in targets if rnd % 2 else targets[::-1]:
                s = measure(t, args.seconds, args.clients)
                samples[t.name].append(s)
                print(
                    f"round {rnd} {t.name:12s} {s.wrk.rps:8,.0f} req/s"
                    f"  server {s.us(s.app_cpu):6.0f} µs/req  redis {s.us(s.redis_cpu):4.0f}"
                    f"  load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
        print(f"load at end {os.getloadavg()[0]:.1f}")
        report(samples)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.request_cost", description=__doc__)
    p.add_argument("--seconds", type=float, default=5, help="seconds per run (5)")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds (3)")
    p.add_argument("--clients", type=int, default=32, help="wrk connections (32)")
    p.add_argument("--workers", type=int, default=2, help="uvicorn workers per server (2)")
    p.add_argument("--warmup", type=float, default=2, help="warm-up seconds per server (2)")
    p.add_argument("--logs", type=Path, default=None, help="server logs folder (a temp one)")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; exit 0."""
    import tempfile

    args = parse_args(argv)
    with (
        bench_output("request_cost", "request_cost: { __typename } through uvicorn"),
        tempfile.TemporaryDirectory(prefix="roost-bench-cost-") as tmp,
        postgres_server() as server,
        throwaway_database(server) as url,
        dedicated_redis() as redis_url,
    ):
        logs = args.logs or Path(tmp)
        logs.mkdir(parents=True, exist_ok=True)
        run_bench(args, url, redis_url, logs)
    return 0


if __name__ == "__main__":
    exit_with(main)
