"""Retry waits and throttled logs, on a clock the test moves (tests/support/clock.py):
workers/events.py's job backoff, domain/notifications/push.py's RetryPolicy, and
app/throttle.py's one line a minute."""

from __future__ import annotations

import logging
import random

import pytest

from app import throttle
from app.throttle import ThrottledLog
from domain.notifications.push import RetryPolicy
from tests.support.clock import FakeClock
from workers.events import BACKOFF_FIRST_S, BACKOFF_MAX_S, backoff


class _Fixed(random.Random):
    """uniform(a, b) -> a or b: the jitter's two ends."""

    def __init__(self, end: str) -> None:
        super().__init__()
        self.end = end

    def uniform(self, a: float, b: float) -> float:
        return a if self.end == "low" else b


def test_job_backoff_doubles_from_200_ms_to_a_3_s_cap() -> None:
    mid = [backoff(n, _Fixed("low")) / 0.8 for n in range(1, 8)]
    assert mid == pytest.approx([0.2, 0.4, 0.8, 1.6, 3.0, 3.0, 3.0])
    assert BACKOFF_FIRST_S == 0.2 and BACKOFF_MAX_S == 3.0


def test_job_backoff_jitter_stays_within_20_percent() -> None:
    rng = random.Random(3)
    for attempt in range(1, 10):
        base = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (attempt - 1))
        for _ in range(50):
            assert 0.8 * base <= backoff(attempt, rng) <= 1.2 * base


def test_push_retry_policy_honours_a_longer_retry_after() -> None:
    policy = RetryPolicy(max_attempts=3, base_s=0.2, max_backoff_s=2.0, budget_s=3.0)
    assert policy.backoff(1, None, _Fixed("high")) == pytest.approx(0.24)
    assert policy.backoff(5, None, _Fixed("high")) == pytest.approx(2.4)  # cap 2 s, +20 %
    assert policy.backoff(1, 1.5, _Fixed("low")) == 1.5  # the provider asked for more


def test_throttled_log_says_once_a_period_how_many_it_left_out(monkeypatch, caplog) -> None:
    clock = FakeClock()
    monkeypatch.setattr(throttle.time, "monotonic", clock.monotonic)
    log = ThrottledLog(logging.getLogger("test.throttle"), every_s=60.0)
    with caplog.at_level(logging.WARNING, logger="test.throttle"):
        log.warn("redis down")
        for _ in range(5):
            clock.advance(10)
            log.warn("redis down")  # within the minute: counted, not logged
        clock.advance(10.0)
        log.warn("redis down")
    assert [r.getMessage() for r in caplog.records] == [
        "redis down",
        "redis down (5 more like it since the last line)",
    ]
