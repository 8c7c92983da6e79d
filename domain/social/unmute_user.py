"""Use case: lift a mute (docs/api/mute-and-block.md "Mute and blocked list")."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.outbox.events import MuteRemoved
from domain.outbox.unit_of_work import unit_of_work
from domain.social.errors import SelfMuteError

_DELETE = text("DELETE FROM mutes WHERE muter_id = :muter AND muted_id = :muted RETURNING true")


async def unmute_user(engine: AsyncEngine, muter_id: uuid.UUID, muted_id: uuid.UUID) -> bool:
    """Lift the mute, idempotent; True if there was one (then ``mute.removed``). Removed
    notifications stay removed. Raises SelfMuteError."""
    if muter_id == muted_id:
        raise SelfMuteError()
    params = {"muter": muter_id, "muted": muted_id}
    async with unit_of_work(engine) as uow:
        conn = uow.conn
        removed = bool(await conn.scalar(_DELETE, params))
        if removed:
            await uow.record(MuteRemoved(muter_id, muted_id))
    return removed
