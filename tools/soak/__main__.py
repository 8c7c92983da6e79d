"""``python -m tools.soak``: one soak; prints the fault table and the audit, exits 1 if
a check failed (the scratch folder, with every process's log, is then kept)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from tools.soak.run import Config, soak


def main(argv: list[str] | None = None) -> int:
    d = Config()
    p = argparse.ArgumentParser(prog="python -m tools.soak", description=__doc__)
    seconds = float(os.environ.get("SOAK_SECONDS", d.seconds))
    p.add_argument("--seconds", type=float, default=seconds, help="load (SOAK_SECONDS)")
    p.add_argument("--users", type=int, default=int(os.environ.get("SOAK_USERS", d.users)))
    p.add_argument("--subscribers", type=int, default=d.subscribers)
    p.add_argument("--each", type=int, default=d.each, help="faults of every kind")
    p.add_argument("--outage", type=float, default=d.outage_s, help="seconds a server is down")
    p.add_argument("--think", type=float, default=d.think_s, help="mean pause of a user (s)")
    p.add_argument("--warm-up", type=float, default=d.warm_up, help="load before the faults (s)")
    p.add_argument("--dir", type=Path, default=None, help="scratch folder (kept)")
    p.add_argument(
        "--cutoff",
        type=float,
        default=None,
        help="no fault starts later than this after the load started (default: seconds + 60;"
        " recoveries slower than planned push the schedule back)",
    )
    a = p.parse_args(argv)
    cfg = Config(
        seconds=a.seconds,
        users=a.users,
        subscribers=min(a.subscribers, a.users),
        each=a.each,
        outage_s=a.outage,
        think_s=a.think,
        warm_up=a.warm_up,
        folder=a.dir,
        cutoff=a.seconds + 60 if a.cutoff is None else a.cutoff,
    )
    report = asyncio.run(soak(cfg))
    print(report.text())
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
