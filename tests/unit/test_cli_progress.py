"""Progress of long commands (app/cli/progress.py) and the worker's quieter job logs
(app/cli/logs.py): pure logic, no servers."""

from __future__ import annotations

import io
import logging
import time

from app.cli.logs import JobLogSummary
from app.cli.progress import CliProgress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_without_a_terminal_each_step_is_a_line_with_rate_and_eta() -> None:
    out = io.StringIO()
    with CliProgress("load-graph", stream=out, every_s=0.05) as progress:
        progress("stage follows", 0, 1000)
        progress("stage follows", 400, 1000)
        # The timer thread writes a line while nothing reports (a long statement).
        deadline = time.monotonic() + 30
        while "(40 %)" not in out.getvalue():
            assert time.monotonic() < deadline, out.getvalue()
            time.sleep(0.01)
        progress("insert follows", 0, None)
    lines = out.getvalue().splitlines()
    assert lines[0] == "load-graph: stage follows…"
    running = [line for line in lines if "of 1,000 rows (40 %)" in line]
    assert running and "rows/s" in running[0] and "ETA" in running[0], lines
    assert any(line.startswith("load-graph: stage follows: done 1,000 rows in") for line in lines)
    assert lines[-1].startswith("load-graph: insert follows: done in")


def test_bytes_read_as_megabytes() -> None:
    out = io.StringIO()
    with CliProgress("load-graph", stream=out, every_s=60) as progress:
        progress("read file", 0, 3_246_522, "bytes")
        progress("read file", 3_246_522, 3_246_522, "bytes")
    assert "done 3,246,522 bytes" in out.getvalue() and "MB/s" in out.getvalue()


def test_on_a_terminal_it_draws_bars() -> None:
    out = _Tty()
    with CliProgress("seed-posts", stream=out) as progress:
        assert progress.interactive
        progress("copy posts", 0, 100)
        progress("copy posts", 100, 100)
        progress("hashtags", 0, None)
    text = out.getvalue()
    assert "seed-posts: copy posts" in text and "seed-posts: hashtags" in text


def test_worker_job_lines_become_a_summary() -> None:
    logger = logging.getLogger(f"test.arq.{id(object())}")
    logger.setLevel(logging.INFO)
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger.addHandler(Keep())
    summary = JobLogSummary(logger, every_s=3600)
    logger.addFilter(summary)
    for _ in range(3):
        logger.info("%6.2fs → %s(%s)%s", 0.1, "outbox:1", "x", "")
        logger.info("%6.2fs ← %s ● %s", 0.1, "outbox:1", "done")
    logger.info("%6.2fs ↻ %s retrying job in %0.2fs", 0.1, "outbox:2", 0.2)
    logger.warning("job %s expired", "outbox:3")
    summary.flush()
    messages = [r.getMessage() for r in records]
    assert messages == ["job outbox:3 expired", "jobs in the last 3600 s: 3 done, 1 retried"]
