"""Asking for a data export concurrently never fails: two at once get one export, and a
request that loses the race to the archive being finished gets the finished one."""

from __future__ import annotations

import asyncio
import datetime as dt

from sqlalchemy import event
from sqlalchemy.util import await_only

from app.database import create_engine
from domain.accounts.build_export import build_export
from domain.accounts.request_export import request_export

EXPORT = """mutation { exportMyData { export { id status } } }"""


async def test_an_export_finished_between_the_insert_and_the_lookup(engine, settings, make_users):
    """The second request's INSERT finds the first export pending (DO NOTHING); the
    archive is finished and committed, on another connection, right before the second
    request looks the pending export up: it answers with the finished export."""
    (me,) = await make_users(1)
    first = await request_export(engine, me.id)
    builder = create_engine(settings.database_url, pool_size=2, max_overflow=0)
    fired: list[str] = []

    def finish_first(conn, cursor, statement, parameters, context, executemany) -> None:
        if not fired and "FROM data_exports" in statement and "status = 'pending'" in statement:
            fired.append(statement)
            # In SQLAlchemy's greenlet: the request's transaction waits between its two
            # statements while the archive is built and committed elsewhere.
            assert await_only(build_export(builder, first.id, keep=dt.timedelta(hours=1)))

    event.listen(engine.sync_engine, "before_cursor_execute", finish_first)
    try:
        again = await request_export(engine, me.id)
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", finish_first)
        await builder.dispose()
    assert fired, "the race was not staged"
    assert again.id == first.id and again.status == "ready"


async def test_concurrent_export_requests_over_http(gql, make_users, worker):
    """Pairs of exportMyData at once, while the worker prepares them: never an error."""
    (me,) = await make_users(1)
    for _ in range(15):
        outs = await asyncio.gather(*(gql(EXPORT, token=me.token) for _ in range(2)))
        for out in outs:
            assert "errors" not in out, out
            assert out["data"]["exportMyData"]["export"]["status"] in ("PENDING", "READY")
        await asyncio.sleep(0.01)
