"""Reads and writes of ``device_tokens`` that other use cases call in their own
transaction: the devices to push to, and the session hooks of log-out and refresh."""

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
    """A registered device: its push ``token`` on ``platform`` (ios, android, web), for
    ``user_id``, registered by the access token of ``session_id``."""

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
    """Delete a device whose token the push provider refused as invalid for good; True
    if it was still there. Matches id and token, so a row the token moved to since (a
    new registration) is left alone."""
    result = await conn.execute(
        text("DELETE FROM device_tokens WHERE id = :id AND token = :token"),
        {"id": device_id, "token": token},
    )
    return bool(result.rowcount)


async def end_session_devices(conn: AsyncConnection, session_ids: Sequence[uuid.UUID]) -> int:
    """Delete the devices registered in ``session_ids`` (sessions that just ended: a
    log-out, or every session of a user); return how many. In the caller's transaction."""
    if not session_ids:
        return 0
    result = await conn.execute(
        text("DELETE FROM device_tokens WHERE session_id = ANY(CAST(:ids AS uuid[]))"),
        {"ids": list(session_ids)},
    )
    return result.rowcount or 0
