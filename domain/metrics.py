"""What the domain measures, behind a port (app/metrics.py); a no-op until :func:`install`."""

from __future__ import annotations

from typing import Protocol


class Metrics(Protocol):
    """The events the domain reports. Implementations must be cheap and never raise."""

    def feed_timelines_read(self, hits: int, misses: int) -> None:
        """A feed read found ``hits`` timelines cached and ``misses`` rebuilt."""

    def feed_rebuilt(self, family: str) -> None:
        """A missing timeline of ``family`` (``feed``, ``posts``) was rebuilt."""

    def feed_fallback(self) -> None:
        """A feed page was served from PostgreSQL because Redis failed."""

    def fanout_done(self, lag_seconds: float, feeds_written: int) -> None:
        """A fan-out finished ``lag_seconds`` after commit, writing ``feeds_written`` feeds."""

    def realtime_dropped(self) -> None:
        """A subscriber's queue was full: its oldest event was dropped."""

    def dead_lettered(self, topic: str) -> None:
        """An outbox event of ``topic`` failed every attempt and became a dead letter."""


class NoMetrics:
    """The :class:`Metrics` in force until an adapter is installed: records nothing."""

    def feed_timelines_read(self, hits: int, misses: int) -> None:
        pass

    def feed_rebuilt(self, family: str) -> None:
        pass

    def feed_fallback(self) -> None:
        pass

    def fanout_done(self, lag_seconds: float, feeds_written: int) -> None:
        pass

    def realtime_dropped(self) -> None:
        pass

    def dead_lettered(self, topic: str) -> None:
        pass


_current: Metrics = NoMetrics()


def install(metrics: Metrics) -> None:
    """Make ``metrics`` receive this process's reports."""
    global _current
    _current = metrics


def current() -> Metrics:
    """The installed :class:`Metrics` (a :class:`NoMetrics` until one is installed)."""
    return _current
