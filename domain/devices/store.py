"""``device_tokens`` reads and writes in callers' transactions."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection


@dataclass(frozen=True, slots=True)
class DeviceRecord:
    """A device: ``token`` on ``platform`` for ``user_id``, from session ``session_id``."""

    id: uuid.UUID
    user_id: uuid.UUID
    session_id: uuid.UUID
    platform: str
    token: str
    registered_at: dt.datetime


COLUMNS = "id, user_id, session_id, platform, token, registered_at"


def to_device(row: Sequence[Any]) -> DeviceRecord:
    """Map a row of :data:`COLUMNS` to a :class:`DeviceRecord`."""
    return DeviceRecord(*row)


async def devices_of(conn: AsyncConnection, user_id: uuid.UUID) -> list[DeviceRecord]:
    """The user's devices, most recently registered first (one statement)."""
    rows = await conn.execute(
        text(
            f"SELECT {COLUMNS} FROM device_tokens WHERE user_id = :user"
            " ORDER BY registered_at DESC, id DESC"
        ),
        {"user": user_id},
    )
    return [to_device(r) for r in rows]


async def forget_token(conn: AsyncConnection, device_id: uuid.UUID, token: str) -> bool:
    """Delete a device whose token was refused for good; True if still there (id and token must
    match)."""
    result = await conn.execute(
        text("DELETE FROM device_tokens WHERE id = :id AND token = :token"),
        {"id": device_id, "token": token},
    )
    return bool(result.rowcount)


async def end_session_devices(conn: AsyncConnection, session_ids: Sequence[uuid.UUID]) -> int:
    """Delete devices of ended ``session_ids`` in the caller's transaction; return how many."""
    if not session_ids:
        return 0
    result = await conn.execute(
        text("DELETE FROM device_tokens WHERE session_id = ANY(CAST(:ids AS uuid[]))"),
        {"ids": list(session_ids)},
    )
    return result.rowcount or 0
