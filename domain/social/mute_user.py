"""Use case: mute an account (docs/api/mute-and-block.md "Mute and blocked list")."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import add_deltas
from domain.errors import NotFoundError
from domain.moderation.account_locks import lock_statuses
from domain.notifications.forget import forget_from
from domain.outbox.events import MuteCreated
from domain.outbox.unit_of_work import unit_of_work
from domain.social.errors import SelfMuteError
from domain.social.pairs import lock_pair

_INSERT = text(
    "INSERT INTO mutes (muter_id, muted_id) VALUES (:muter, :muted)"
    " ON CONFLICT DO NOTHING RETURNING true"
)


async def mute_user(
    engine: AsyncEngine, muter_id: uuid.UUID, muted_id: uuid.UUID, *, counter_shards: int
) -> bool:
    """Mute ``muted_id`` under the pair lock; True if new (idempotent). Raises SelfMuteError or
    NotFoundError."""
    if muter_id == muted_id:
        raise SelfMuteError()
    params = {"muter": muter_id, "muted": muted_id}
    async with unit_of_work(engine) as uow:
        conn = uow.conn
        await lock_pair(conn, muter_id, muted_id)
        statuses = await lock_statuses(conn, [muter_id, muted_id])
        if statuses.get(muted_id) != "active":
            raise NotFoundError("No user has that id.")
        created = bool(await conn.scalar(_INSERT, params))
        if created:
            deltas = await forget_from(conn, muted_id, muter_id)
            await add_deltas(conn, deltas, shards=counter_shards)
            await uow.record(MuteCreated(muter_id, muted_id))
    return created
