"""Test helpers for GraphQL over WebSocket: a client for both subscription protocols
and real API processes (uvicorn) started against the test database and Redis."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import socket
import subprocess
import sys
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from tests.support.polling import PATIENCE_S

TRANSPORT_WS = "graphql-transport-ws"
LEGACY_WS = "graphql-ws"
ROOT = Path(__file__).resolve().parents[2]


class Refused(Exception):
    """The server refused the connection_init (close code or connection_error)."""

    def __init__(self, code: int | None, reason: str, payload: object = None) -> None:
        super().__init__(f"refused: {code} {reason} {payload}")
        self.code = code
        self.reason = reason
        self.payload = payload


@dataclass
class WSClient:
    """One socket speaking ``protocol``; :meth:`subscribe` starts an operation and
    :meth:`next` returns its next result's payload ({data, errors?})."""

    ws: ClientConnection
    protocol: str
    ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    @classmethod
    async def open(
        cls,
        url: str,
        protocol: str,
        token: str | None,
        *,
        key: str = "authorization",
        **connect_kwargs,
    ) -> WSClient:
        """Connect and authenticate; raises Refused if the server will not have it.
        ``connect_kwargs`` go to ``websockets.connect`` (e.g. ``local_addr``)."""
        ws = await connect(url, subprotocols=[protocol], open_timeout=PATIENCE_S, **connect_kwargs)
        payload = {key: f"Bearer {token}"} if token is not None else {}
        await ws.send(json.dumps({"type": "connection_init", "payload": payload}))
        try:
            msg = json.loads(_text(await asyncio.wait_for(ws.recv(), PATIENCE_S)))
        except ConnectionClosed as exc:
            rcvd = exc.rcvd
            raise Refused(rcvd.code if rcvd else None, rcvd.reason if rcvd else "") from None
        if msg["type"] != "connection_ack":
            with suppress(Exception):
                await ws.close()
            raise Refused(None, msg["type"], msg.get("payload"))
        return cls(ws, protocol)

    async def subscribe(self, query: str, variables: dict | None = None) -> str:
        op = str(next(self.ids))
        kind = "subscribe" if self.protocol == TRANSPORT_WS else "start"
        payload = {"query": query, "variables": variables or {}}
        await self.ws.send(json.dumps({"id": op, "type": kind, "payload": payload}))
        return op

    async def stop(self, op: str) -> None:
        kind = "complete" if self.protocol == TRANSPORT_WS else "stop"
        await self.ws.send(json.dumps({"id": op, "type": kind}))

    async def message(self, within: float = PATIENCE_S) -> dict:
        """The next protocol message other than keep-alives (TimeoutError after
        ``within`` seconds)."""
        deadline = time.monotonic() + within
        while True:
            left = deadline - time.monotonic()
            msg = json.loads(_text(await asyncio.wait_for(self.ws.recv(), max(left, 0.001))))
            if msg["type"] not in ("ka", "ping", "pong"):
                return msg

    async def next(self, within: float = PATIENCE_S) -> dict:
        """The payload of the next result (``next`` / ``data``); fails on anything else."""
        msg = await self.message(within)
        assert msg["type"] in ("next", "data"), msg
        return msg["payload"]

    async def nothing(self, within: float = 0.7) -> None:
        """Assert that no message arrives within ``within`` seconds."""
        try:
            msg = await self.message(within)
        except TimeoutError:
            return
        raise AssertionError(f"unexpected message: {msg}")

    async def close(self) -> None:
        await self.ws.close()


def _text(frame: str | bytes) -> str:
    """A protocol message, which both protocols send as a text frame (graphql-ws clients
    in browsers and node refuse a binary one)."""
    assert isinstance(frame, str), f"a binary frame: {frame[:200]!r}"
    return frame


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class ApiProcess:
    """A Roost API process (``uvicorn --factory app.asgi:create_app``)."""

    proc: subprocess.Popen
    port: int

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}/graphql"

    async def gql(self, query: str, variables: dict | None = None, *, token: str) -> dict:
        async with httpx.AsyncClient(base_url=self.http, timeout=20) as c:
            resp = await c.post(
                "/graphql",
                json={"query": query, "variables": variables or {}},
                headers={"Authorization": f"Bearer {token}"},
            )
        assert resp.status_code == 200, resp.text
        return resp.json()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start_api(env: dict[str, str]) -> ApiProcess:
    """Start one API process with ``env`` on a free port and wait for /readyz."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            "app.asgi:create_app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        # No metrics port unless asked: test processes never take the fixed 9100.
        # PORT: the origin the API names in its own URLs (upload targets, media).
        env={**os.environ, "METRICS_PORT": "0", "PORT": str(port), **env},
    )
    api = ApiProcess(proc, port)
    deadline = time.monotonic() + 2 * PATIENCE_S  # imports and the schema build, loaded
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"API process exited with {proc.returncode}")
        try:
            if httpx.get(f"{api.http}/readyz", timeout=10).status_code == 200:
                return api
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    api.stop()
    raise RuntimeError("API process did not become ready")


def start_client_api(settings, **extra: str) -> ApiProcess:
    """An API process on the run's database, Redis and queue for tests that drive real
    clients: no rate limits, a small pool, ``extra`` settings on top."""
    return start_api(
        {
            "DATABASE_URL": settings.database_url,
            "REDIS_URL": settings.redis_url,
            "ARQ_QUEUE": settings.arq_queue,
            "JWT_SECRET": settings.jwt_secret,
            "RATE_LIMIT_ENABLED": "false",
            "WORKER_METRICS_PORT": "0",
            "DB_POOL_SIZE": "3",
            "DB_MAX_OVERFLOW": "4",
            "MEDIA_DIR": str(settings.media_dir),
            **extra,
        }
    )
