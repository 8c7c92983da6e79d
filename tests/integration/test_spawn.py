"""app.embedded.processes.spawn: a child that dies with its parent, started without
running Python code between fork and exec."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]

#: Another thread holds a PyAV scaler (as the media pipeline's threads do) while the main
#: thread spawns: Python code in the forked child would finalize it and hang for good.
SCALER_HELD = textwrap.dedent(
    """
    import sys, threading
    import numpy as np
    from av.video.frame import VideoFrame
    from app.embedded.processes import spawn

    ready, done = threading.Event(), threading.Event()

    def scale():
        frame = VideoFrame.from_ndarray(np.zeros((64, 64, 3), dtype=np.uint8), format="rgb24")
        frame.reformat(width=32, height=32, format="yuv420p")
        ready.set()
        done.wait()

    threading.Thread(target=scale, daemon=True).start()
    ready.wait()
    print("exit", spawn([sys.executable, "-c", "pass"]).wait())
    """
)

#: Spawns a long sleep, prints its pid, then waits to be killed.
PARENT = textwrap.dedent(
    """
    import sys, time
    from app.embedded.processes import spawn

    child = spawn([sys.executable, "-c", "import time; time.sleep(120)"])
    print(child.pid, flush=True)
    time.sleep(120)
    """
)


def _python(code: str, **kwargs) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, text=True, stdout=subprocess.PIPE, **kwargs
    )


def test_spawn_while_another_thread_holds_a_native_scaler_does_not_hang():
    proc = _python(SCALER_HELD)
    try:
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0 and out.split() == ["exit", "0"], out


def test_a_spawned_child_dies_when_its_parent_is_killed():
    parent = _python(PARENT)
    try:
        assert parent.stdout is not None
        child = psutil.Process(int(parent.stdout.readline()))
        assert child.is_running()
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        gone, _ = psutil.wait_procs([child], timeout=10)
        assert gone, "the child outlived its parent"
    finally:
        parent.kill()
