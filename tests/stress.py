"""``make test-stress``: the whole suite while every core is busy.

    python -m tests.stress [--busy N] [PYTEST ARGS...]

Starts N (default: one per core, ``os.cpu_count()``) Python processes that spin
(``while True: pass``) at the lowest priority that still competes (nice 0: the same
as the suite's), runs ``python -m app.testrun PYTEST ARGS`` (embedded servers unless
DATABASE_URL / REDIS_URL are set), then stops the spinners, whatever happened. Exits
with the suite's exit code. A suite that passes here has no race that a slow event
loop, worker or server exposes: tests synchronise on events and state, never on the
wall clock. Needs nothing beyond the virtualenv (no stress-ng).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

SPIN = "while True:\n    pass\n"


def start_spinners(count: int) -> list[subprocess.Popen[bytes]]:
    """Start ``count`` busy-loop processes (each keeps one core at 100 %)."""
    return [
        subprocess.Popen([sys.executable, "-c", SPIN], stdin=subprocess.DEVNULL)
        for _ in range(count)
    ]


def stop_spinners(spinners: list[subprocess.Popen[bytes]]) -> None:
    """Stop the busy loops this module started (SIGTERM, then SIGKILL after 5 s)."""
    for proc in spinners:
        if proc.poll() is None:
            proc.terminate()
    for proc in spinners:
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suite under load; return its exit code."""
    parser = argparse.ArgumentParser(prog="python -m tests.stress", add_help=True)
    parser.add_argument(
        "--busy", type=int, default=os.cpu_count() or 2, help="busy-loop processes (default: cores)"
    )
    ours, pytest_args = parser.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    cmd = [sys.executable, "-m", "app.testrun", *(pytest_args or ["-q"])]
    spinners = start_spinners(ours.busy)
    # SIGTERM/SIGHUP (CI cancelling the job) end in the finally below like Ctrl-C does.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: sys.exit(128 + signum))
    started = time.monotonic()
    print(f"tests.stress: {len(spinners)} busy-loop processes; running {' '.join(cmd[1:])}")
    suite: subprocess.Popen[bytes] | None = None
    try:
        suite = subprocess.Popen(cmd)
        rc = suite.wait()
    except KeyboardInterrupt:
        rc = 130
    finally:
        if suite is not None and suite.poll() is None:
            suite.terminate()  # app.testrun stops its child and its embedded servers
            try:
                suite.wait(30)
            except subprocess.TimeoutExpired:
                suite.kill()
        stop_spinners(spinners)
    print(f"tests.stress: exit code {rc} after {time.monotonic() - started:.0f} s under load")
    return rc


if __name__ == "__main__":
    sys.exit(main())
