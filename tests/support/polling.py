"""Waiting for state, never for time.

A test that needs something to have happened (a job ran, a message arrived, a key
expired) polls for that state with :func:`eventually`. Its deadline only bounds a test
that is already failing, so it is generous (:data:`PATIENCE_S`): on a loaded machine a
green test still passes as soon as the state holds, and never waits the deadline out.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

#: The deadline of every wait for a state that must come (seconds). Only a failing test
#: waits this long; a passing one returns as soon as the state holds.
PATIENCE_S = 60.0

#: How often a wait looks again (seconds).
STEP_S = 0.02


async def eventually(
    check: Callable[[], T | Awaitable[T]], *, within: float = PATIENCE_S, step: float = STEP_S
) -> T:
    """Call ``check`` (sync or async) until it returns something truthy and return that.

    Raises AssertionError, with the last value, once ``within`` seconds passed.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {within:g} s (last: {value!r})")
        await asyncio.sleep(step)


async def arrives(awaitable: Awaitable[T], *, within: float = PATIENCE_S) -> T:
    """Await something that must come (a message, a process's exit), failing the test
    only after the generous ``within``."""
    try:
        async with asyncio.timeout(within):
            return await awaitable
    except TimeoutError:
        raise AssertionError(f"nothing arrived within {within:g} s") from None
