"""Reads of data exports: the latest, the download in slices, pruning."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

COLUMNS = "id, user_id, status, requested_at, ready_at, expires_at, size_bytes"

#: Bytes read from PostgreSQL per slice of a download.
CHUNK_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class ExportRecord:
    """A data export: ``status`` ``pending`` or ``ready`` (until ``expires_at``); ``size_bytes``
    once ready."""

    id: uuid.UUID
    user_id: uuid.UUID
    status: str
    requested_at: dt.datetime
    ready_at: dt.datetime | None
    expires_at: dt.datetime | None
    size_bytes: int | None


def to_export(row: Sequence[Any]) -> ExportRecord:
    """Map a row of :data:`COLUMNS` to an :class:`ExportRecord`."""
    return ExportRecord(*row)


async def latest_export(conn: AsyncConnection, user_id: uuid.UUID) -> ExportRecord | None:
    """The user's most recent export that has not expired, or None."""
    row = (
        await conn.execute(
            text(
                f"SELECT {COLUMNS} FROM data_exports WHERE user_id = :u"
                " AND (expires_at IS NULL OR expires_at > now())"
                " ORDER BY requested_at DESC, id DESC LIMIT 1"
            ),
            {"u": user_id},
        )
    ).first()
    return to_export(row) if row else None


async def exports_of_user(
    conn: AsyncConnection, user_id: uuid.UUID, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, ExportRecord]:
    """The unexpired exports among ``ids`` of ``user_id``, by id."""
    if not ids:
        return {}
    rows = (
        await conn.execute(
            text(
                f"SELECT {COLUMNS} FROM data_exports WHERE id = ANY(:ids) AND user_id = :u"
                " AND (expires_at IS NULL OR expires_at > now())"
            ),
            {"ids": list(ids), "u": user_id},
        )
    ).all()
    return {r.id: r for r in map(to_export, rows)}


async def downloadable_export(engine: AsyncEngine, export_id: uuid.UUID) -> ExportRecord | None:
    """The export if its archive is ready and not expired, else None."""
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    f"SELECT {COLUMNS} FROM data_exports WHERE id = :id AND status = 'ready'"
                    " AND expires_at > now()"
                ),
                {"id": export_id},
            )
        ).first()
    return to_export(row) if row else None


async def archive_chunks(
    engine: AsyncEngine, export_id: uuid.UUID, *, chunk: int = CHUNK_BYTES
) -> AsyncIterator[bytes]:
    """The archive's bytes, ``chunk`` at a time, one ``substring`` read each (stored uncompressed
    out of line); stops if deleted."""
    offset = 1
    while True:
        async with engine.connect() as conn:
            part = await conn.scalar(
                text("SELECT substring(archive FROM :off FOR :n) FROM data_exports WHERE id = :id"),
                {"id": export_id, "off": offset, "n": chunk},
            )
        if not part:
            return
        yield bytes(part)
        if len(part) < chunk:
            return
        offset += len(part)


async def prune_exports(engine: AsyncEngine) -> int:
    """Delete the archives past their ``expires_at``; return how many."""
    async with engine.begin() as conn:
        result = await conn.execute(text("DELETE FROM data_exports WHERE expires_at <= now()"))
    return result.rowcount or 0
