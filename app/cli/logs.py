"""Quieter worker logs: arq's INFO lines per job become DEBUG, and one summary line
every :data:`SUMMARY_EVERY_S` seconds says how many jobs ran (only when some did)."""

from __future__ import annotations

import logging
import threading
from collections import Counter

#: Seconds between two summary lines (only when jobs ran meanwhile).
SUMMARY_EVERY_S = 15.0

# arq's per-job messages (arq/worker.py): start, done, retry, abort or cancel.
_MARKS = {"→": "started", "←": "done", "↻": "retried", "⊘": "aborted"}


class JobLogSummary(logging.Filter):
    """A filter on ``arq.worker``: per-job INFO records are counted and demoted to DEBUG,
    a daemon thread logs the summary; WARNING and above pass unchanged."""

    def __init__(self, logger: logging.Logger, every_s: float = SUMMARY_EVERY_S) -> None:
        super().__init__()
        self.logger = logger
        self.every_s = every_s
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="job-log-summary", daemon=True)

    @classmethod
    def install(cls, logger: logging.Logger) -> JobLogSummary:
        """Add the filter to ``logger`` (once per process) and return it."""
        for f in logger.filters:
            if isinstance(f, cls):
                return f
        summary = cls(logger)
        logger.addFilter(summary)
        summary._thread.start()
        return summary

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or not isinstance(record.msg, str):
            return True
        kind = next((k for mark, k in _MARKS.items() if mark in record.msg[:12]), None)
        if kind is None:
            return True
        with self._lock:
            self.counts[kind] += 1
        if self.logger.isEnabledFor(logging.DEBUG):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return True
        return False

    def flush(self) -> None:
        """Log the summary of the jobs counted since the last one (if any)."""
        with self._lock:
            counts, self.counts = self.counts, Counter()
        if counts["done"] or counts["retried"] or counts["aborted"]:
            self.logger.info("jobs in the last %.0f s: %s", self.every_s, _describe(counts))

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.flush()


def _describe(counts: Counter[str]) -> str:
    order = ("done", "retried", "aborted")
    return ", ".join(f"{counts[k]} {k}" for k in order if counts[k])
