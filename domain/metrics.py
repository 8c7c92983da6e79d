"""What the domain measures, behind a port (Prometheus in app/metrics.py); until one is
installed (:func:`install`) every report is a no-op."""

from __future__ import annotations

from typing import Protocol


class Metrics(Protocol):
    """The events the domain reports. Implementations must be cheap and never raise."""

    def feed_timelines_read(self, hits: int, misses: int) -> None:
        """A feed read found ``hits`` timelines (the viewer's feed, pull authors'
        stores) cached in Redis and ``misses`` missing (rebuilt from PostgreSQL)."""

    def feed_rebuilt(self, family: str) -> None:
        """A missing timeline of ``family`` (``feed``, ``posts``) was rebuilt."""

    def feed_fallback(self) -> None:
        """A feed page was served from PostgreSQL because Redis failed."""

    def fanout_done(self, lag_seconds: float, feeds_written: int) -> None:
        """A post's fan-out finished ``lag_seconds`` after its commit, having written
        ``feeds_written`` follower feeds."""

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
    """Make ``metrics`` receive every report of this process (the API and the worker
    install their adapter at start-up)."""
    global _current
    _current = metrics


def current() -> Metrics:
    """The installed :class:`Metrics` (a :class:`NoMetrics` until one is installed)."""
    return _current
