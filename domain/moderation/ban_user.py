"""Use case: a moderator bans an account (docs/api/moderation.md "Reports and moderation") via the
operator's status change."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import NotFoundError, ValidationError
from domain.identity.session_store import SessionStore
from domain.locks import advisory_xact_lock
from domain.moderation.errors import NotModeratorError
from domain.moderation.moderators import require_moderator
from domain.moderation.reports import close_reports
from domain.moderation.set_user_status import change_status
from domain.outbox.unit_of_work import unit_of_work


@dataclass(frozen=True)
class Ban:
    """``banned``: it was active and is banned now; ``resolved_reports`` actioned."""

    banned: bool
    resolved_reports: int


async def ban_user(
    engine: AsyncEngine,
    moderator_id: uuid.UUID,
    user_id: uuid.UUID,
    *,
    counter_shards: int,
    sessions: SessionStore | None = None,
) -> Ban:
    """Ban ``user_id`` and action its open reports in one transaction, then tell the session cache.
    Idempotent. Raises NotModeratorError, ValidationError or NotFoundError."""
    async with unit_of_work(engine) as uow:
        conn = uow.conn
        # The status-change lock first, so a status change of the moderator cannot deadlock.
        await advisory_xact_lock(conn, "user-status")
        await require_moderator(conn, moderator_id)  # the role before any of the input
        if user_id == moderator_id:
            raise ValidationError("userId", "You cannot ban yourself.")
        target = (
            await conn.execute(text("SELECT is_moderator FROM users WHERE id = :x"), {"x": user_id})
        ).first()
        if target is None:
            raise NotFoundError("No user has that id.")
        if target.is_moderator:
            raise NotModeratorError("A moderator cannot be banned; revoke the role first.")
        change = await change_status(uow, user_id, "banned", counter_shards=counter_shards)
        resolved = await close_reports(conn, moderator_id, user_id=user_id)
    await change.announce(sessions)
    return Ban(banned=change.changed, resolved_reports=resolved)
