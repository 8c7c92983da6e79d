"""Child processes that die with Roost, and what both servers share: the start error,
the timeouts, a free port and the tail of a log."""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

log = logging.getLogger("roost.embedded")

#: Seconds to wait for a server to answer after starting it.
START_TIMEOUT = 15.0
#: Seconds to wait for a server to exit after SIGTERM before SIGKILL.
STOP_TIMEOUT = 10.0


class EmbeddedError(RuntimeError):
    """An embedded server failed to start; the message carries the tail of its log."""


def _set_parent_death_signal() -> None:
    """In a child before exec: ask Linux to SIGTERM it when its parent dies."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # pragma: no cover - best effort only
        pass


@functools.cache
def _pdeathsig_wrapper() -> tuple[str, ...]:
    """``setpriv --pdeathsig TERM --`` where it works (util-linux 2.33+), else ()."""
    setpriv, true = shutil.which("setpriv"), shutil.which("true")
    if not sys.platform.startswith("linux") or setpriv is None or true is None:
        return ()
    wrapper = (setpriv, "--pdeathsig", "TERM", "--")
    try:
        ok = subprocess.run([*wrapper, true], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    return wrapper if ok else ()


def spawn(
    cmd: list[str],
    *,
    env: dict[str, str] | None = None,
    own_session: bool = False,
    stdout: IO[Any] | int | None = None,
    stderr: IO[Any] | int | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``cmd`` as a child that dies with this process (PR_SET_PDEATHSIG); with
    ``own_session`` a terminal's Ctrl-C reaches only this process. FileNotFoundError
    when ``cmd[0]`` is not found.

    Through ``setpriv`` where there is one, so no Python code runs in the child between
    fork and exec: there it would finalize other threads' objects, and a native
    finalizer (PyAV's scaler freeing its threads' locks) can hang the child for good."""
    wrapper = _pdeathsig_wrapper()
    if not wrapper:
        return subprocess.Popen(
            cmd,
            env=env,
            stdout=stdout,
            stderr=stderr,
            start_new_session=own_session,
            preexec_fn=_set_parent_death_signal,
        )
    return subprocess.Popen(
        [*wrapper, _executable(cmd[0], env), *cmd[1:]],
        env=env,
        stdout=stdout,
        stderr=stderr,
        start_new_session=own_session,
    )


def _executable(name: str, env: dict[str, str] | None) -> str:
    """``name`` as Popen would run it (PATH of ``env``, else the default path); raises
    FileNotFoundError or PermissionError as Popen does."""
    if os.sep in name:
        found = name
    else:
        path = os.pathsep.join(os.get_exec_path(env))
        found = shutil.which(name, path=path) or shutil.which(name, mode=os.F_OK, path=path) or ""
    if not found or not os.path.exists(found):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)
    if not os.access(found, os.X_OK) or os.path.isdir(found):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), name)
    return found


def stop_process(proc: subprocess.Popen[Any], *, timeout: float = STOP_TIMEOUT) -> int | None:
    """SIGTERM ``proc``, SIGKILL after ``timeout`` seconds; its exit code."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log.warning("pid %s ignored SIGTERM for %.0f s; killing it", proc.pid, timeout)
            proc.kill()
            proc.wait()
    return proc.returncode


def _free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on ``host`` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _log_tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
