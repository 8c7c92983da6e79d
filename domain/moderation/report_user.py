"""Use case: report an account for moderation (docs/api/moderation.md "Reports and moderation")."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import NotFoundError, ValidationError
from domain.moderation.account_locks import lock_statuses
from domain.moderation.reports import ReportRecord, check_report, file_report
from domain.outbox.events import ReportFiled
from domain.outbox.unit_of_work import unit_of_work


async def report_user(
    engine: AsyncEngine, reporter_id: uuid.UUID, user_id: uuid.UUID, *, reason: str, note: str
) -> ReportRecord:
    """File or update the report of active account ``user_id`` (not oneself); return it. Raises
    ValidationError or NotFoundError."""
    note = check_report(reason, note)
    if user_id == reporter_id:
        raise ValidationError("id", "You cannot report yourself.")
    async with unit_of_work(engine) as uow:
        conn = uow.conn
        statuses = await lock_statuses(conn, [reporter_id, user_id])
        if statuses.get(user_id) != "active" or statuses.get(reporter_id) != "active":
            raise NotFoundError("No user has that id.")
        report = await file_report(
            conn, reporter_id, user_id=user_id, post_id=None, reason=reason, note=note
        )
        await uow.record(ReportFiled(report.id, "user"))
    return report
