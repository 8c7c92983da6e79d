"""A clock that tests move by hand, for the pure parts that read time (backoff, budgets,
throttles, windows): no sleeping, no dependence on how fast the machine is."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field


@dataclass
class FakeClock:
    """``monotonic()`` and ``now()`` that move only when :meth:`advance` (or ``sleep``)
    says so; ``sleeps`` records every sleep asked for, in seconds."""

    t: float = 1_000.0
    start: dt.datetime = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)
    sleeps: list[float] = field(default_factory=list)

    def monotonic(self) -> float:
        """Seconds, as ``time.monotonic()``."""
        return self.t

    def now(self) -> dt.datetime:
        """An aware UTC datetime, as ``domain.db.utcnow()``."""
        return self.start + dt.timedelta(seconds=self.t - 1_000.0)

    def advance(self, seconds: float) -> None:
        """Move the clock forward."""
        assert seconds >= 0, "a clock never goes back"
        self.t += seconds

    async def sleep(self, seconds: float) -> None:
        """An ``asyncio.sleep`` that returns at once, having moved the clock."""
        self.sleeps.append(seconds)
        self.advance(max(0.0, seconds))
