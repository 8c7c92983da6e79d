"""``python -m bench.http_edge``: what the HTTP edge (app/http_edge.py: request id,
request metrics, gzip when asked, CORS when configured) costs per request.

The same ``{ __typename }`` request (no database, no Redis: rate limits off) is sent
straight through ASGI, in interleaved rounds, to:

- ``null app``, ``null+edge``, ``null+edge+gzip``, ``null+edge+cors``: an ASGI app that
  answers a fixed 31-byte body, alone and behind the edge (the edge's own cost,
  without GraphQL's noise);
- ``router``: the app's router alone, below every middleware (the baseline);
- ``starlette``: the routes in a plain Starlette app (its error middleware only: the app
  as it was before the edge);
- ``edge``: the whole app (Starlette's error middleware + HttpEdge);
- ``edge+gzip``: the same with ``Accept-Encoding: gzip`` (the response is under 1 KB,
  so it goes out as it is: the cost of asking);
- ``edge+cors``: an app with CORS_ALLOW_ORIGINS set, from an allowed ``Origin``;
- ``big``, ``big+gzip``: a 20 KB response (introspection of every type's fields) without
  and with compression, to show what gzip itself costs when it works.

It prints CPU µs per request (this process's CPU time: the server's work) per variant
and the extra over the router. No database or Redis is needed; DATABASE_URL is not
used (a placeholder URL: nothing connects).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from collections.abc import Sequence

from starlette.applications import Starlette

from app.asgi import create_app
from app.http_edge import EXPOSED_HEADERS, Cors, HttpEdge
from app.settings import Settings
from bench._support import bench_output, exit_with, table

SMALL = json.dumps({"query": "{ __typename }"}).encode()
BIG = json.dumps({"query": "{ __schema { types { name fields { name } } } }"}).encode()


def _settings(**extra: object) -> Settings:
    return Settings(
        DATABASE_URL="postgresql://bench@127.0.0.1:1/unused",
        REDIS_URL=None,
        RATE_LIMIT_ENABLED=False,
        METRICS_PORT=0,
        JWT_SECRET="bench-secret-" + "x" * 32,
        **extra,
    )


async def _call(app, body: bytes, headers: list[tuple[bytes, bytes]]) -> int:
    """One POST /graphql through ``app``; return the response body's size."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/graphql",
        "raw_path": b"/graphql",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    sent = False
    size = 0

    async def receive():
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        nonlocal size
        if message["type"] == "http.response.body":
            size += len(message.get("body", b""))

    await app(scope, receive, send)
    return size


async def _round(app, body, headers, n: int) -> float:
    """CPU µs per request over ``n`` requests."""
    t0 = time.process_time()
    for _ in range(n):
        await _call(app, body, headers)
    return (time.process_time() - t0) / n * 1e6


async def _null_app(scope, receive, send) -> None:
    """The cheapest ASGI app: a fixed 31-byte JSON response."""
    await receive()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), (b"content-length", b"31")],
        }
    )
    await send({"type": "http.response.body", "body": b'{"data":{"__typename":"Query"}}'})


async def bench(args: argparse.Namespace) -> None:
    plain = create_app(_settings())
    cors = create_app(_settings(CORS_ALLOW_ORIGINS="https://app.example.com"))
    gzip_h = [(b"accept-encoding", b"gzip, deflate, br")]
    origin = [(b"origin", b"https://app.example.com")]
    # The app as it was before the edge: Starlette's own error middleware, no more.
    bare = Starlette(routes=plain.router.routes)
    null_edge = HttpEdge(_null_app)
    null_cors = Cors(
        null_edge, allow_origins=["https://app.example.com"], expose_headers=EXPOSED_HEADERS
    )
    variants = {
        "null app": (_null_app, SMALL, []),
        "null+edge": (null_edge, SMALL, []),
        "null+edge+gzip": (null_edge, SMALL, gzip_h),
        "null+edge+cors": (null_cors, SMALL, origin),
        "router": (plain.router, SMALL, []),
        "starlette": (bare, SMALL, []),
        "edge": (plain, SMALL, []),
        "edge+gzip": (plain, SMALL, gzip_h),
        "edge+cors": (cors, SMALL, origin),
        "big": (plain, BIG, []),
        "big+gzip": (plain, BIG, gzip_h),
    }
    sizes = {name: await _call(app, body, h) for name, (app, body, h) in variants.items()}
    for app, body, h in variants.values():  # warm-up: caches, imports
        await _round(app, body, h, 200)
    results: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, (app, body, h) in variants.items():
            results[name].append(await _round(app, body, h, args.requests))
    base = statistics.median(results["router"])
    big = statistics.median(results["big"])
    null = statistics.median(results["null app"])
    rows = []
    for name, values in results.items():
        med = statistics.median(values)
        ref = big if name.startswith("big") else null if name.startswith("null") else base
        rows.append(
            (name, f"{med:.1f}", f"{med - ref:+.1f}", f"{med / ref:.3f}x", f"{sizes[name]:,}")
        )
    print(
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; {args.rounds} rounds x"
        f" {args.requests} requests per variant, interleaved"
    )
    print(table(("variant", "CPU µs/request", "extra µs", "ratio", "response bytes"), rows))
    print(
        "HttpEdge alone (over the null app, medians): "
        f"{statistics.median(results['null+edge']) - null:.1f} µs per request,"
        f" {statistics.median(results['null+edge+gzip']) - null:.1f} µs with gzip asked"
        f" (small response), {statistics.median(results['null+edge+cors']) - null:.1f} µs"
        " with CORS and an Origin"
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.http_edge", description=__doc__)
    p.add_argument("--rounds", type=int, default=5, help="rounds of each variant (default 5)")
    p.add_argument("--requests", type=int, default=2000, help="requests per round (2000)")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; exit 0."""
    args = parse_args(argv)
    with bench_output("http_edge", "http_edge: CPU per request of the HTTP edge"):
        asyncio.run(bench(args))
    return 0


if __name__ == "__main__":
    exit_with(main)
