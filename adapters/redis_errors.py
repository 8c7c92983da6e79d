"""Redis failures as domain sees them: a redis-py error leaves an adapter as
:class:`domain.errors.StoreError`, the redis-py error its ``__cause__`` (so
``adapters.unavailable`` still finds a connection failure under it)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from redis.exceptions import RedisError

from domain.errors import StoreError

P = ParamSpec("P")
R = TypeVar("R")


def store_error(exc: RedisError) -> StoreError:
    """``exc`` as a StoreError caused by it."""
    err = StoreError(str(exc) or type(exc).__name__)
    err.__cause__ = exc
    return err


def translated(fn: Callable[P, Awaitable[R]]) -> Callable[P, Coroutine[Any, Any, R]]:
    """``fn`` raising StoreError (from the RedisError) where it raised RedisError."""

    @functools.wraps(fn)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except RedisError as exc:
            raise store_error(exc) from exc

    return call
