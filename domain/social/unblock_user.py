"""Use case: lift a block. Follows it ended stay ended."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.outbox.events import BlockRemoved
from domain.outbox.unit_of_work import unit_of_work
from domain.social.errors import SelfBlockError


async def unblock_user(engine: AsyncEngine, blocker_id: uuid.UUID, blocked_id: uuid.UUID) -> bool:
    """Remove the block, idempotent; True if one was (then ``block.removed``). Raises
    SelfBlockError."""
    if blocker_id == blocked_id:
        raise SelfBlockError()
    async with unit_of_work(engine) as uow:
        conn = uow.conn
        removed = await conn.scalar(
            text(
                "DELETE FROM blocks WHERE blocker_id = :blocker AND blocked_id = :blocked"
                " RETURNING true"
            ),
            {"blocker": blocker_id, "blocked": blocked_id},
        )
        if removed:
            await uow.record(BlockRemoved(blocker_id, blocked_id))
    return bool(removed)
