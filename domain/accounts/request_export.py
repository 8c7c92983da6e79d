"""Use case: ask for an archive of one's data (docs/api/account-lifecycle.md "Account
lifecycle")."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.accounts.exports import COLUMNS, ExportRecord, latest_export, to_export
from domain.db import new_id
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import DataExportRequested
from domain.outbox.unit_of_work import unit_of_work

#: The topic of the job that prepares an archive (domain.accounts.build_export).
EXPORT_REQUESTED = DataExportRequested.topic

_PENDING = text(f"SELECT {COLUMNS} FROM data_exports WHERE user_id = :u AND status = 'pending'")
_INSERT = text(
    f"""
    INSERT INTO data_exports (id, user_id) VALUES (:id, :u)
    ON CONFLICT (user_id) WHERE status = 'pending' DO NOTHING
    RETURNING {COLUMNS}
    """
)
# A new archive replaces the older ones: one per user is kept.
_OLDER = text("DELETE FROM data_exports WHERE user_id = :u AND status = 'ready'")


async def request_export(
    engine: AsyncEngine, user_id: uuid.UUID, *, dispatcher: Dispatcher | None = None
) -> ExportRecord:
    """Ask for a new archive (earlier ones deleted) and return its record; while one is pending,
    return it."""
    async with unit_of_work(engine, dispatcher) as uow:
        conn = uow.conn
        for _ in range(3):
            row = (await conn.execute(_INSERT, {"id": new_id(), "u": user_id})).first()
            if row is not None:
                break
            # Pending already, or a moment ago (READ COMMITTED: each statement sees prior commits).
            pending = (await conn.execute(_PENDING, {"u": user_id})).first()
            if pending is not None:
                return to_export(pending)
            finished = await latest_export(conn, user_id)
            if finished is not None:
                return finished
            # finished and gone (expired, pruned): ask again
        else:
            raise RuntimeError("data export request kept losing its race")  # never seen
        record = to_export(row)
        await conn.execute(_OLDER, {"u": user_id})
        await uow.record(DataExportRequested(record.id, user_id))
    return record
