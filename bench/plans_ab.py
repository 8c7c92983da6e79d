"""Planned execution against graphql-core's, in one process: the API's CPU per request
with EXECUTION_PLANS on and off (app/execution_plan.py), requests interleaved.

Two apps (``create_app``, one with ``EXECUTION_PLANS=true``, one with ``false``) over the
same database (prepared by ``bench.feed_vs_postgraphile --keep-db NAME``) and a dedicated
``redis-server``, driven through ``httpx.ASGITransport`` one request at a time,
alternating between them, so both see the same machine load; ``time.process_time()``
per request is the API's CPU (and the in-process client's, the same for both). For each
viewer it prints the median CPU of the home-feed page and of ``{ __typename }`` per app
and the ratio planned / generic; the responses of both must be byte-identical (exit 1
otherwise).

Usage::

    python -m bench.plans_ab --db postgresql://postgres@127.0.0.1:5432/roost_bench_NAME
        [--viewers sd39 sd195 sd2494] [--requests 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid
from collections.abc import Sequence

import httpx

from app.database import create_engine
from app.settings import Settings
from bench._slashdot import in_process_args
from bench._support import bench_output, dedicated_redis, exit_with, run, table
from bench.feed_cpu import FEED, LOG_IN

TYPENAME = "{ __typename }"


async def main_async(args: argparse.Namespace, redis_url: str) -> int:
    from app.asgi import create_app

    engine = create_engine(args.db, pool_size=10, max_overflow=10)
    base = {
        "DATABASE_URL": args.db,
        "REDIS_URL": redis_url,
        "JWT_SECRET": "plans-ab-" + uuid.uuid4().hex,
        "RATE_LIMIT_REQUESTS": 10**9,
        "ARQ_QUEUE": "bench:plans_ab",
        "METRICS_PORT": 0,
        "WORKER_METRICS_PORT": 0,
        "ACCESS_TOKEN_MINUTES": 600,
    }
    apps = {
        name: create_app(Settings(**base, EXECUTION_PLANS=plans), engine=engine)
        for name, plans in (("generic", False), ("planned", True))
    }
    rows = []
    bad = 0
    async with (
        apps["generic"].router.lifespan_context(apps["generic"]),
        apps["planned"].router.lifespan_context(apps["planned"]),
    ):
        clients = {
            name: httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://b")
            for name, app in apps.items()
        }
        password = Settings(**base).dev_password
        for viewer in args.viewers:
            r = await clients["generic"].post(
                "/graphql", json={"query": LOG_IN, "variables": {"u": viewer, "p": password}}
            )
            auth = {"authorization": f"Bearer {r.json()['data']['logIn']['accessToken']}"}
            cpu: dict[tuple[str, str], list[float]] = {}
            bodies: dict[tuple[str, str], bytes] = {}
            for i in range(args.warmup + args.requests):
                for query, headers in ((FEED, auth), (TYPENAME, {})):
                    for name, client in clients.items():
                        c0 = time.process_time()
                        resp = await client.post("/graphql", json={"query": query}, headers=headers)
                        spent = time.process_time() - c0
                        if i >= args.warmup:
                            cpu.setdefault((query, name), []).append(spent)
                        bodies[(query, name)] = resp.content
            for query, label in ((FEED, f"feed {viewer}"), (TYPENAME, "{ __typename }")):
                same = bodies[(query, "generic")] == bodies[(query, "planned")]
                bad += not same
                g = statistics.median(cpu[(query, "generic")])
                p = statistics.median(cpu[(query, "planned")])
                rows.append(
                    [
                        label,
                        f"{1e3 * g:.3f}",
                        f"{1e3 * p:.3f}",
                        f"{p / g:.2f}x",
                        "yes" if same else "NO",
                    ]
                )
        for client in clients.values():
            await client.aclose()
    await engine.dispose()
    print(f"load {os.getloadavg()[0]:.2f} at the end; medians of {args.requests} requests each")
    print(
        table(
            ["request", "generic CPU ms", "planned CPU ms", "planned / generic", "same bytes"],
            rows,
        )
    )
    return 1 if bad else 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    return in_process_args("plans_ab", __doc__, ["sd39", "sd195", "sd2494"], argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with (
        bench_output("plans_ab", "planned vs generic execution, API CPU per request"),
        dedicated_redis(args.redis_server) as redis_url,
    ):
        return run(lambda: main_async(args, redis_url))


if __name__ == "__main__":
    exit_with(main)
