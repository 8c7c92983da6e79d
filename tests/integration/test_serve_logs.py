"""``roost serve --workers 2``: every API process logs with a timestamp and a level, and
keeps Roost's INFO lines (the children configure logging as the parent does)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.servers import Output, free_port, throwaway_database

ROOST = str(Path(sys.executable).with_name("roost"))
STAMP = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} "


def test_every_api_process_logs_time_level_and_info(settings):
    with throwaway_database() as url:
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "REDIS_URL": settings.redis_url,
            "HOST": "127.0.0.1",
            "PORT": str(free_port()),
            "METRICS_PORT": "0",
            "ROOST_LOG_LEVEL": "INFO",
            "DB_POOL_SIZE": "1",
            "DB_MAX_OVERFLOW": "1",
        }
        proc = subprocess.Popen(
            [ROOST, "serve", "--workers", "2"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        out = Output(proc)
        try:
            # Both children: their own INFO line each.
            deadline = time.monotonic() + 120
            while len(set(re.findall(r"API process (\d+) started", out.text))) < 2:
                assert time.monotonic() < deadline and proc.poll() is None, out.text
                out.wait_for("API process", within=120)
                out._drain(0.5)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            out.finish(60)
    started = re.findall(STAMP + r"INFO roost: API process (\d+) started$", out.text, re.M)
    assert len(set(started)) == 2, out.text
    assert re.search(STAMP + r"INFO uvicorn.error: Started server process", out.text, re.M), (
        out.text
    )
