"""A log line that repeats at most once a period: during an outage the same failure
arrives on every request or every poll, and one line a minute says as much."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any


class ThrottledLog:
    """``warn(msg, *args)`` logs at WARNING at most once every ``every_s`` seconds,
    adding how many were left out since the last line."""

    def __init__(self, logger: logging.Logger, *, every_s: float = 60.0) -> None:
        self.logger = logger
        self.every_s = every_s
        self._next = 0.0
        self._skipped = 0
        self._lock = threading.Lock()

    def warn(self, msg: str, *args: Any) -> None:
        """Log ``msg % args`` now, or count it if a line went out within ``every_s``."""
        now = time.monotonic()
        with self._lock:
            if now < self._next:
                self._skipped += 1
                return
            skipped, self._skipped = self._skipped, 0
            self._next = now + self.every_s
        if skipped:
            msg += f" ({skipped} more like it since the last line)"
        self.logger.warning(msg, *args)
