"""Checks of the uploads a request names: the caller's, pending, unexpired, arrived at the declared
size; raising UploadNotFoundError or UploadUnusableError with ``index``."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from domain.media.config import raw_key
from domain.media.errors import UploadNotFoundError, UploadUnusableError
from domain.media.ports import ObjectStore

_UPLOADS = """
    SELECT id, kind, state, byte_size, expires_at FROM uploads
    WHERE id = ANY(CAST(:ids AS uuid[])) AND owner_id = :owner
"""


def check_uploads(ids: Sequence[uuid.UUID], rows: dict[uuid.UUID, Any], now: dt.datetime) -> None:
    """Each of ``ids`` in ``rows``, pending and unexpired at ``now``; else the first's error."""
    for i, upload_id in enumerate(ids):
        row = rows.get(upload_id)
        if row is None:
            raise UploadNotFoundError(upload_id, index=i)
        if row.state == "failed":
            raise UploadUnusableError(upload_id, "FAILED", "This upload was refused.", index=i)
        if row.state == "expired" or (row.state == "pending" and row.expires_at <= now):
            raise UploadUnusableError(
                upload_id,
                "EXPIRED",
                "This upload expired; reserve a new one and send it again.",
                index=i,
            )
        if row.state != "pending":
            raise UploadUnusableError(upload_id, "USED", "This upload is already used.", index=i)


async def read_uploads(
    conn: AsyncConnection, ids: Sequence[uuid.UUID], owner: uuid.UUID, *, lock: bool
) -> dict[uuid.UUID, Any]:
    """``{id: row}`` of ``ids`` that ``owner`` reserved (``lock``: FOR UPDATE in id order)."""
    sql = _UPLOADS + (" ORDER BY id FOR UPDATE" if lock else "")
    rows = await conn.execute(text(sql), {"ids": list(ids), "owner": owner})
    return {r.id: r for r in rows}


async def check_arrived(
    store: ObjectStore, ids: Sequence[uuid.UUID], rows: dict[uuid.UUID, Any]
) -> None:
    """Each upload's bytes are in quarantine, as many as declared."""
    found = await asyncio.gather(*(store.stat_raw(raw_key(i)) for i in ids))
    for i, (upload_id, obj) in enumerate(zip(ids, found, strict=True)):
        if obj is None:
            raise UploadUnusableError(
                upload_id,
                "NOT_UPLOADED",
                "No bytes arrived for this upload; send the file first.",
                index=i,
            )
        declared = rows[upload_id].byte_size
        if obj.size != declared:
            raise UploadUnusableError(
                upload_id,
                "NOT_UPLOADED",
                f"This upload has {obj.size} bytes of the {declared} declared; send it again.",
                index=i,
            )
