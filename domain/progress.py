"""How long-running domain work (bulk loads, seeding, rebuilds, verification) reports
its progress, without knowing who shows it: the command line draws a bar on a terminal
and logs a line every few seconds otherwise (``app/cli/progress.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol, TypeVar

T = TypeVar("T")


class Progress(Protocol):
    """Called as work advances: phase ``step``, ``done`` of ``total`` (None: unknown) in
    ``unit``. Cheap, never raises; may run in a worker thread."""

    def __call__(self, step: str, done: int, total: int | None, unit: str = "rows") -> None: ...


def no_progress(step: str, done: int, total: int | None, unit: str = "rows") -> None:
    """The default :class:`Progress`: report nothing."""


def counted(
    items: Iterable[T],
    progress: Progress,
    step: str,
    total: int | None,
    *,
    unit: str = "rows",
    every: int = 10_000,
) -> Iterator[T]:
    """Yield ``items``, reporting ``(step, n, total)`` to ``progress`` every ``every``
    items and once at the end."""
    n = 0
    progress(step, 0, total, unit)
    for item in items:
        yield item
        n += 1
        if n % every == 0:
            progress(step, n, total, unit)
    progress(step, n, total if total is not None else n, unit)
