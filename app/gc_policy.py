"""Cyclic-GC policy of an API process holding thousands of open subscriptions.

A full collection with 10,000 sockets stalls the loop for 1-2 s, so long-lived objects
are frozen after start-up and whenever subscriptions arrived; cycles among them are
reclaimed by a compaction once ``compact_after`` subscriptions closed.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time

from app.realtime import Hub

log = logging.getLogger("roost.gc")

#: Net container allocations between young collections (CPython: 700, about once per
#: feed page, walking objects about to die); requests make no reference cycles.
GEN0_THRESHOLD = 10_000


def start_serving() -> tuple[int, int, int]:
    """Freeze what start-up built, raise the young threshold; the thresholds before."""
    before = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(GEN0_THRESHOLD, *before[1:])
    return before


def stop_serving(before: tuple[int, int, int]) -> None:
    """Undo :func:`start_serving`: the thresholds back, everything collectable again."""
    gc.set_threshold(*before)
    gc.unfreeze()


class GcPolicy:
    """The module's policy; ``run`` is a task of the app."""

    def __init__(
        self,
        hub: Hub,
        *,
        check_every_s: float = 1.0,
        compact_after: int = 20_000,
    ) -> None:
        self.hub = hub
        self.check_every_s = check_every_s
        self.compact_after = compact_after
        self._opened = 0  # opened_total at the last freeze
        self._closed = 0  # closed_total at the last compaction

    def step(self) -> str | None:
        """One check: ``"compact"``, ``"freeze"`` or None (nothing to do)."""
        hub = self.hub
        if hub.closed_total - self._closed >= max(self.compact_after, hub.subscriber_count):
            started = time.perf_counter()
            gc.unfreeze()
            gc.collect()
            gc.freeze()
            self._opened, self._closed = hub.opened_total, hub.closed_total
            log.info("gc compaction took %.0f ms", (time.perf_counter() - started) * 1000)
            return "compact"
        opened = hub.opened_total
        arrived = opened - self._opened
        if arrived:
            gc.freeze()
            self._opened = opened
            log.debug(
                "gc freeze after %d new subscriptions: %d frozen", arrived, gc.get_freeze_count()
            )
            return "freeze"
        return None

    async def run(self) -> None:
        """Check every ``check_every_s`` seconds until cancelled."""
        while True:
            await asyncio.sleep(self.check_every_s)
            self.step()
