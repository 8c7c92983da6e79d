"""adapters.postgres.fetch: reads on asyncpg over a connection borrowed from the engine's pool give
it back in every outcome: after a refused statement the connection is reused, after a
lost connection or a cancelled statement it is replaced, and the pool never leaks."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from sqlalchemy import event

from adapters.postgres.fetch import _survived, fetch
from app.database import create_engine


@pytest.fixture
async def small_engine(settings):
    eng = create_engine(settings.database_url, pool_size=2, max_overflow=0)
    yield eng
    await eng.dispose()


async def backend_pid(engine) -> int:
    return (await fetch(engine, "SELECT pg_backend_pid()"))[0][0]


async def test_rows_come_back_with_no_transaction_and_the_connection_is_reused(small_engine):
    pool = small_engine.sync_engine.pool
    begins: list[object] = []
    event.listen(small_engine.sync_engine, "begin", lambda conn: begins.append(conn))
    rows = await fetch(small_engine, "SELECT $1::int + 1 AS n", 41)
    assert rows[0]["n"] == 42
    first = await backend_pid(small_engine)
    assert await backend_pid(small_engine) == first
    assert pool.checkedout() == 0 and begins == []


async def test_a_refused_statement_keeps_the_connection(small_engine):
    pool = small_engine.sync_engine.pool
    pid = await backend_pid(small_engine)
    with pytest.raises(asyncpg.DivisionByZeroError):
        await fetch(small_engine, "SELECT 1 / 0")
    with pytest.raises(asyncpg.DataError):  # an argument asyncpg cannot encode
        await fetch(small_engine, "SELECT $1::int", "not a number")
    assert pool.checkedout() == 0
    assert await backend_pid(small_engine) == pid


async def test_a_lost_connection_is_replaced_and_the_read_runs_again(small_engine, engine):
    pool = small_engine.sync_engine.pool
    pid = await backend_pid(small_engine)
    async with engine.connect() as admin:
        await admin.exec_driver_sql(f"SELECT pg_terminate_backend({pid})")
    # Whatever the client sees of the lost backend (a PostgresError 57P01, an
    # InterfaceError, an OSError, or an InternalClientError when the goodbye came while
    # the connection sat in the pool), the read is not failed for it.
    assert (await fetch(small_engine, "SELECT 7"))[0][0] == 7
    assert pool.checkedout() == 0
    assert await backend_pid(small_engine) != pid


def _stale_first(engine, failures: list[Exception]) -> list[str]:
    """Make the next statements fail with ``failures`` (one each) as a stale pooled
    connection fails, before the statement reaches the server; return the statements
    sent."""
    sent: list[str] = []

    def before(conn, cursor, statement, *args):
        sent.append(statement)
        if failures:
            raise failures.pop(0)

    event.listen(engine.sync_engine, "before_cursor_execute", before)
    return sent


def _mid_state() -> asyncpg.InternalClientError:
    return asyncpg.InternalClientError("cannot switch to state 12; another operation (2)")


async def test_a_stale_pooled_connection_is_dropped_and_the_read_retried_once(small_engine):
    """The race a loaded machine hit during a PostgreSQL restart: the pooled connection's
    protocol was left mid-state, and the feed read failed with INTERNAL_SERVER_ERROR."""
    pool = small_engine.sync_engine.pool
    pid = await backend_pid(small_engine)
    failures: list[Exception] = [_mid_state()]
    sent = _stale_first(small_engine, failures)
    assert (await fetch(small_engine, "SELECT 7"))[0][0] == 7
    assert sent == ["SELECT 7", "SELECT 7"] and failures == []
    assert pool.checkedout() == 0
    assert await backend_pid(small_engine) != pid  # the stale connection was dropped


async def test_a_second_loss_in_a_row_is_raised(small_engine):
    failures: list[Exception] = [_mid_state(), _mid_state()]
    sent = _stale_first(small_engine, failures)
    with pytest.raises(asyncpg.InternalClientError):
        await fetch(small_engine, "SELECT 7")
    assert sent == ["SELECT 7", "SELECT 7"]  # once more, not forever
    assert small_engine.sync_engine.pool.checkedout() == 0


async def test_a_refused_statement_is_not_run_again(small_engine):
    sent = _stale_first(small_engine, [])
    with pytest.raises(asyncpg.DivisionByZeroError):
        await fetch(small_engine, "SELECT 1 / 0")
    assert sent == ["SELECT 1 / 0"]


async def test_a_cancelled_statement_drops_its_connection_only(small_engine):
    pool = small_engine.sync_engine.pool
    sent = asyncio.Event()
    event.listen(small_engine.sync_engine, "before_cursor_execute", lambda *a: sent.set())
    task = asyncio.create_task(fetch(small_engine, "SELECT pg_sleep(30)"))
    await sent.wait()  # the task now waits for the statement's answer
    assert pool.checkedout() == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert pool.checkedout() == 0
    assert (await fetch(small_engine, "SELECT 7"))[0][0] == 7


def test_an_internal_client_error_drops_the_connection():
    """The race a loaded machine hit: the backend's goodbye read while the connection sat
    in the pool leaves asyncpg's protocol mid-state, and the next statement raises
    InternalClientError before the socket is seen closed; that connection must not go
    back to the pool."""

    class Open:
        def is_closed(self) -> bool:
            return False

    class Fairy:
        driver_connection = Open()

    lost = asyncpg.InternalClientError("cannot switch to state 11; another operation (2)")
    assert _survived(Fairy(), lost) is False
    assert _survived(Fairy(), asyncpg.UndefinedTableError("no such table")) is True


async def test_a_timed_out_statement_is_not_run_again(small_engine):
    """A timeout is an OSError, but a slow statement, not a lost connection."""
    sent = _stale_first(small_engine, [TimeoutError("statement timed out")])
    with pytest.raises(TimeoutError):
        await fetch(small_engine, "SELECT 7")
    assert sent == ["SELECT 7"]
    assert small_engine.sync_engine.pool.checkedout() == 0
