"""Progress of long commands: :class:`CliProgress`, a bar with rate and ETA on a
terminal, a plain line every few seconds otherwise."""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import IO, Any

#: Seconds between two lines when not on a terminal.
LINE_EVERY_S = 5.0


@dataclass
class _Step:
    name: str
    unit: str
    started: float
    done: int = 0
    total: int | None = None

    def line(self, title: str, now: float, *, finished: bool = False) -> str:
        elapsed = max(now - self.started, 1e-9)
        head = f"{title}: {self.name}"
        if finished:
            amount = f" {self.done:,} {self.unit}" if self.done else ""
            rate = f", {_rate(self.done / elapsed, self.unit)}" if self.done else ""
            return f"{head}: done{amount} in {elapsed:.1f} s{rate}"
        if self.total is None and not self.done:
            return f"{head}: {elapsed:.0f} s so far"
        per_s = self.done / elapsed
        parts = [f"{head}: {_amount(self.done, self.total, self.unit)}"]
        if self.done:
            parts.append(_rate(per_s, self.unit))
        if self.total and per_s > 0:
            parts.append(f"ETA {_duration(max(0, self.total - self.done) / per_s)}")
        parts.append(f"{elapsed:.0f} s so far")
        return ", ".join(parts)


def _amount(done: int, total: int | None, unit: str) -> str:
    if unit == "bytes":
        if total:
            return f"{done / 1e6:.1f} of {total / 1e6:.1f} MB ({100 * done / total:.0f} %)"
        return f"{done / 1e6:.1f} MB"
    if total:
        return f"{done:,} of {total:,} {unit} ({100 * done / total:.0f} %)"
    return f"{done:,} {unit}"


def _rate(per_s: float, unit: str) -> str:
    if unit == "bytes":
        return f"{per_s / 1e6:.1f} MB/s"
    return f"{per_s:,.0f} {unit}/s"


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


class CliProgress:
    """A thread-safe :class:`domain.progress.Progress` (and context manager): bars when
    ``interactive`` (default: ``stream`` is a terminal), else a line per step start
    and end and every ``every_s`` s."""

    def __init__(
        self,
        title: str,
        *,
        stream: IO[str] | None = None,
        interactive: bool | None = None,
        every_s: float = LINE_EVERY_S,
    ) -> None:
        self.title = title
        self.stream = stream or sys.stderr
        self.interactive = self.stream.isatty() if interactive is None else interactive
        self.every_s = every_s
        self._lock = threading.Lock()
        self._step: _Step | None = None
        self._last_line = 0.0
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._bars: Any = None
        self._task: Any = None

    def __enter__(self) -> CliProgress:
        if self.interactive:
            self._bars = _rich_progress(self.stream)
            self._bars.start()
        else:
            self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(failed=exc[0] is not None)

    def __call__(self, step: str, done: int, total: int | None, unit: str = "rows") -> None:
        now = time.monotonic()
        with self._lock:
            current = self._step
            if current is None or current.name != step:
                self._end_step(now)
                current = self._step = _Step(step, unit, now, done, total)
                self._begin_step(current)
            else:
                current.done, current.total = done, total
            if self._bars is not None:
                self._bars.update(self._task, completed=done, total=total)

    def close(self, *, failed: bool = False) -> None:
        """End the current step (marked done unless ``failed``) and stop drawing."""
        with self._lock:
            if not failed:
                self._end_step(time.monotonic())
            self._step = None
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        if self._bars is not None:
            self._bars.stop()
            self._bars = None

    def _begin_step(self, step: _Step) -> None:
        if self._bars is not None:
            self._task = self._bars.add_task(
                f"{self.title}: {step.name}", total=step.total, completed=step.done, unit=step.unit
            )
            return
        self._write(f"{self.title}: {step.name}…")

    def _end_step(self, now: float) -> None:
        step = self._step
        if step is None:
            return
        if step.total is None or step.done < step.total:
            step.total = max(step.done, step.total or 0)
            step.done = step.total
        if self._bars is not None:
            # An indeterminate step shows as a full bar once it is over.
            self._bars.update(self._task, total=step.total or 1, completed=step.total or 1)
            self._bars.stop_task(self._task)
            return
        self._write(step.line(self.title, now, finished=True))

    def _write(self, line: str) -> None:
        self._last_line = time.monotonic()
        print(line, file=self.stream, flush=True)

    def _tick(self) -> None:
        while not self._stop.wait(min(1.0, self.every_s)):
            with self._lock:
                now = time.monotonic()
                if self._step is not None and now - self._last_line >= self.every_s:
                    self._write(self._step.line(self.title, now))


def _rich_progress(stream: IO[str]) -> Any:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class Amount(ProgressColumn):
        def render(self, task: Any) -> Text:
            unit = task.fields.get("unit", "")
            return Text(_amount(int(task.completed), task.total, unit), style="progress.download")

    class Rate(ProgressColumn):
        def render(self, task: Any) -> Text:
            speed = task.finished_speed or task.speed
            if not speed:
                return Text("")
            return Text(_rate(speed, task.fields.get("unit", "")), style="progress.data.speed")

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        Amount(),
        Rate(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=Console(file=stream),
    )
