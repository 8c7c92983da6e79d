"""npm packages for tests that drive real JavaScript clients and tools: each set of
packages is installed once into its own folder of the cache (``ROOST_CACHE``, else
``$XDG_CACHE_HOME/roost``, else ``~/.cache/roost``), keyed by the exact versions, under
a file lock so concurrent runs install it once. Tests skip, saying why, only when node
or npm is not on the machine."""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.support.polling import PATIENCE_S

#: JavaScript files the tests run (copied next to their packages, so node resolves them).
JS_DIR = Path(__file__).resolve().parent / "js"


def cache_dir() -> Path:
    """Where npm packages of the tests are kept between runs."""
    explicit = os.environ.get("ROOST_CACHE")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "roost"


def require_node() -> tuple[str, str]:
    """The node and npm executables (skips the test without them)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed: this test drives real JavaScript clients")
    return node, npm


def npm_folder(name: str, packages: Sequence[str], *, timeout: float = 600) -> Path:
    """A folder holding ``packages`` (``"name@version"``) in its node_modules and an ES
    module ``package.json``; installed on first use."""
    _, npm = require_node()
    key = hashlib.sha256(json.dumps(sorted(packages)).encode()).hexdigest()[:12]
    folder = cache_dir() / f"{name}-{key}"
    folder.mkdir(parents=True, exist_ok=True)
    done = folder / ".installed"
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            (folder / "package.json").write_text('{"private": true, "type": "module"}\n')
            subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", *packages],
                cwd=folder,
                check=True,
                timeout=timeout,
            )
            done.write_text("\n".join(packages) + "\n")
    return folder


def with_script(folder: Path, *names: str) -> Path:
    """Copy the scripts ``names`` of :data:`JS_DIR` into ``folder``; the path of the first."""
    for name in names:
        shutil.copy(JS_DIR / name, folder / name)
    return folder / names[0]


async def run_node(folder: Path, script: Path, config: dict, tmp_path: Path) -> dict:
    """Run ``script`` in ``folder`` with ``config`` (a JSON file, its one argument); the
    last line it prints, parsed as JSON. Fails with its stderr if it exits non-zero."""
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(config))
    run = await asyncio.to_thread(
        subprocess.run,
        ["node", str(script), str(config_file)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=10 * PATIENCE_S,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.strip().splitlines()[-1])
