"""Use case: a moderator removes a post (docs/api/moderation.md "Reports and moderation"), as the
author's deletion."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.moderation.moderators import require_moderator
from domain.moderation.reports import close_reports
from domain.outbox.dispatch import Dispatcher
from domain.outbox.unit_of_work import unit_of_work
from domain.posts.delete_post import LOCK_FOR_DELETE, mark_deleted
from domain.posts.errors import PostNotFoundError


@dataclass(frozen=True)
class Removal:
    """``removed``: live and deleted now; ``resolved_reports`` actioned."""

    removed: bool
    resolved_reports: int


async def remove_post(
    engine: AsyncEngine,
    moderator_id: uuid.UUID,
    post_id: uuid.UUID,
    *,
    counter_shards: int,
    dispatcher: Dispatcher | None = None,
) -> Removal:
    """Delete ``post_id`` as a moderator and action its reports, one transaction. Idempotent. Raises
    NotModeratorError or PostNotFoundError."""
    removed = False
    async with unit_of_work(engine, dispatcher) as uow:
        conn = uow.conn
        await require_moderator(conn, moderator_id)
        row = (await conn.execute(LOCK_FOR_DELETE, {"id": post_id})).first()
        if row is None:
            raise PostNotFoundError()
        if row.deleted_at is None:
            await mark_deleted(
                uow, post_id, row.author_id, counter_shards=counter_shards, by="moderator"
            )
            removed = True
        resolved = await close_reports(conn, moderator_id, post_id=post_id)
    return Removal(removed=removed, resolved_reports=resolved)
