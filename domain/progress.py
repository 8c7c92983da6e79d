"""How long domain work reports progress, without knowing who shows it (``app/cli/progress.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol, TypeVar

T = TypeVar("T")


class Progress(Protocol):
    """``(step, done, total | None, unit)`` as work advances; cheap, never raises, any thread."""

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
    """Yield ``items``, reporting to ``progress`` every ``every`` and at the end."""
    n = 0
    progress(step, 0, total, unit)
    for item in items:
        yield item
        n += 1
        if n % every == 0:
            progress(step, n, total, unit)
    progress(step, n, total if total is not None else n, unit)
