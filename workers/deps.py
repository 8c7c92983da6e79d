"""The worker's typed dependencies in arq's ``ctx``."""

from __future__ import annotations

from typing import Any

from app.container import WorkerDeps

#: The key of the worker's :class:`WorkerDeps` in arq's ``ctx``.
DEPS = "deps"


def deps_of(ctx: dict[str, Any]) -> WorkerDeps:
    """The worker's typed dependencies (set at start by workers/settings.py)."""
    deps = ctx[DEPS]
    assert isinstance(deps, WorkerDeps)
    return deps
