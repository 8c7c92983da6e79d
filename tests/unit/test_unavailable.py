"""adapters.unavailable: which failures mean "PostgreSQL or Redis is down" (answered
SERVICE_UNAVAILABLE and retried) rather than a bug (INTERNAL_SERVER_ERROR)."""

from __future__ import annotations

import asyncpg
import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from adapters.unavailable import POSTGRES, REDIS, unavailable_dependency


@pytest.mark.parametrize(
    ("exc", "dependency"),
    [
        (asyncpg.AdminShutdownError("terminating connection"), POSTGRES),
        (asyncpg.CannotConnectNowError("the database system is starting up"), POSTGRES),
        (asyncpg.ConnectionDoesNotExistError("connection was closed in the middle"), POSTGRES),
        # A protocol left mid-state by a backend that went away while pooled.
        (asyncpg.InternalClientError("cannot switch to state 12"), POSTGRES),
        (RedisConnectionError("Connection refused"), REDIS),
        (asyncpg.UniqueViolationError("duplicate key"), None),
        (ValueError("a bug"), None),
    ],
)
def test_what_counts_as_a_server_down(exc: BaseException, dependency: str | None) -> None:
    assert unavailable_dependency(exc) == dependency


def test_a_wrapped_failure_is_seen_through() -> None:
    try:
        try:
            raise asyncpg.InternalClientError("cannot switch to state 12")
        except asyncpg.InternalClientError as inner:
            raise RuntimeError("resolver failed") from inner
    except RuntimeError as outer:
        assert unavailable_dependency(outer) == POSTGRES
