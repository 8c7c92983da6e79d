"""``python -m bench.media_upload``: upload throughput through the local store's endpoint
(``PUT /uploads/raw/<id>``, app/media_routes.py) against a plain file copy.

An API process of its own (uvicorn, one process, MEDIA_STORAGE=local on a temporary
folder; no database or Redis is touched) receives ``--mb`` MB bodies streamed from a
file by httpx over 127.0.0.1, in rounds interleaved with the baseline: the same file
copied with ``shutil.copyfile`` and fsynced into the same folder (what the endpoint
does at the least: read the bytes, write them, fsync). It prints MB/s per variant
(median of the rounds), the ratio to the copy, and the CPU time per MB of the API
process and of the client (this process: httpx sending 64 KB at a time).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import psutil

from adapters.storage.local import LocalObjectStore
from app.embedded import _free_port
from app.settings import Settings
from bench._support import bench_output, table

JWT = "bench-media-upload-secret-" + "x" * 32


def _serve(media: Path, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DATABASE_URL": "postgresql://bench@127.0.0.1:1/unused",
        "REDIS_URL": "",
        "MEDIA_DIR": str(media),
        "JWT_SECRET": JWT,
        "RATE_LIMIT_ENABLED": "false",
        "METRICS_PORT": "0",
        "GC_FREEZE": "false",
    }
    cmd = [sys.executable, "-m", "uvicorn", "app.asgi:create_app", "--factory"]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    cmd += ["--no-access-log", "--lifespan", "off"]
    proc = subprocess.Popen(cmd, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
            return proc
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("the API did not start")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=64, help="body size in MB")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    size = args.mb * 1_000_000
    with tempfile.TemporaryDirectory(prefix="roost-bench-upload-") as folder:
        root = Path(folder)
        source = root / "source.bin"
        with source.open("wb") as f:
            for _ in range(args.mb):
                f.write(os.urandom(1_000_000))
        media = root / "media"
        port = _free_port()
        server = _serve(media, port)
        base = f"http://127.0.0.1:{port}"
        settings = Settings(DATABASE_URL="postgresql://x/y", JWT_SECRET=JWT, MEDIA_DIR=media)
        store = LocalObjectStore(
            media,
            signing_key=settings.media_signing_secret,
            upload_base_url=base,
            public_base_url=base,
        )
        api, me = psutil.Process(server.pid), psutil.Process()
        rates: dict[str, list[float]] = {"file copy + fsync": [], "PUT /uploads": []}
        cpu_per_mb: list[float] = []
        client_per_mb: list[float] = []
        try:
            with httpx.Client(timeout=120) as http:
                for _ in range(args.rounds):
                    started = time.perf_counter()
                    copy = root / f"copy-{uuid.uuid4().hex}"
                    shutil.copyfile(source, copy)
                    with copy.open("rb+") as f:
                        os.fsync(f.fileno())
                    rates["file copy + fsync"].append(size / (time.perf_counter() - started))
                    copy.unlink()

                    key = f"raw/{uuid.uuid4()}"
                    expires = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=15)
                    target = store.presign_upload(
                        key, content_type="video/mp4", byte_size=size, expires_at=expires
                    )
                    cpu_before = sum(api.cpu_times()[:2])
                    client_before = sum(me.cpu_times()[:2])
                    started = time.perf_counter()
                    with source.open("rb") as body:
                        resp = http.put(target.url, content=body, headers=dict(target.headers))
                    elapsed = time.perf_counter() - started
                    cpu_per_mb.append((sum(api.cpu_times()[:2]) - cpu_before) / args.mb)
                    client_per_mb.append((sum(me.cpu_times()[:2]) - client_before) / args.mb)
                    if resp.status_code != 201:
                        raise RuntimeError(f"upload answered {resp.status_code}: {resp.text}")
                    rates["PUT /uploads"].append(size / elapsed)
                    (media / "quarantine" / key).unlink()
        finally:
            server.terminate()
            server.wait(10)
    baseline = statistics.median(rates["file copy + fsync"])
    rows = []
    for name, values in rates.items():
        median = statistics.median(values)
        put = name == "PUT /uploads"
        cpu = f"{statistics.median(cpu_per_mb) * 1000:.1f}" if put else ""
        client = f"{statistics.median(client_per_mb) * 1000:.1f}" if put else ""
        rows.append([name, f"{median / 1e6:.0f}", f"{median / baseline:.2f}x", cpu, client])
    print(
        f"{args.mb} MB bodies, {args.rounds} interleaved rounds, median MB/s "
        f"(load {os.getloadavg()[0]:.1f}):"
    )
    print(table(["variant", "MB/s", "vs copy", "API CPU ms/MB", "client CPU ms/MB"], rows))


if __name__ == "__main__":
    with bench_output("media_upload", "Upload throughput: PUT /uploads vs a file copy"):
        main()
