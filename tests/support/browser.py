"""Headless Chromium driven over the DevTools protocol (no extra library: a WebSocket
and JSON), for tests that look at pages the way a person's browser does."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import websockets

from tests.support.polling import PATIENCE_S
from tests.support.servers import free_port

#: Debian's package (`apt-get install chromium`); other names as found on other systems.
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

#: What the tests launch Chromium with: headless, no sandbox (root, containers), no
#: background traffic of its own.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,900",
]
#: Offline but for the loopback interface: every other host name fails to resolve and
#: every other connection goes to a proxy that is not there.
OFFLINE = [
    "--proxy-server=http://127.0.0.1:9",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]


def chromium_path() -> str | None:
    """The Chromium executable on PATH, or None."""
    return next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


class Page:
    """One page target: ``evaluate`` JavaScript, ``wait_for`` a condition, ``screenshot``."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self._ids = itertools.count(1)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send a DevTools command and return its result (events are skipped)."""
        msg_id = next(self._ids)
        await self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            reply = json.loads(await self.ws.recv())
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    async def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (awaited if it is a promise)."""
        result = await self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, within: float = PATIENCE_S) -> Any:
        """Poll ``expression`` until it is truthy; return it (AssertionError after
        ``within`` seconds)."""
        deadline = time.monotonic() + within
        while True:
            with contextlib.suppress(RuntimeError):
                value = await self.evaluate(expression)
                if value:
                    return value
            if time.monotonic() > deadline:
                raise AssertionError(f"not true within {within} s: {expression}")
            await asyncio.sleep(0.1)

    async def screenshot(self, path: Path) -> Path:
        """Save a PNG of the viewport to ``path``."""
        data = await self.call("Page.captureScreenshot", format="png")

        def save() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(base64.b64decode(data["data"]))

        await asyncio.to_thread(save)
        return path


@contextlib.asynccontextmanager
async def chromium(url: str, *, offline: bool = True) -> AsyncIterator[Page]:
    """Launch headless Chromium (a fresh profile) on ``url``; yield its page."""
    exe = chromium_path()
    assert exe is not None, "no chromium on PATH"
    port = free_port()
    # Chromium's helper processes may still write to the profile as it is removed.
    with tempfile.TemporaryDirectory(
        prefix="roost-chromium-", ignore_cleanup_errors=True
    ) as profile:
        cmd = [
            exe,
            *FLAGS,
            *(OFFLINE if offline else []),
            f"--user-data-dir={profile}",
            f"--remote-debugging-port={port}",
            url,
        ]
        proc = await asyncio.to_thread(
            subprocess.Popen,
            cmd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            ws_url = await _page_socket(port, proc)
            async with websockets.connect(ws_url, max_size=None) as ws:
                yield Page(ws)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)  # the browser and its helpers
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


async def _page_socket(port: int, proc: subprocess.Popen[bytes], within: float = PATIENCE_S) -> str:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"chromium exited with {proc.returncode}")
        try:
            raw = await asyncio.to_thread(
                lambda: urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/json/list", timeout=2
                ).read()
            )
            pages = [t for t in json.loads(raw) if t.get("type") == "page"]
            if pages:
                return pages[0]["webSocketDebuggerUrl"]
        except OSError:
            pass
        await asyncio.sleep(0.1)
    raise AssertionError(f"chromium's DevTools did not answer within {within} s")
