"""Use case: report a post for moderation (docs/api/moderation.md "Reports and moderation")."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import ValidationError
from domain.moderation.reports import ReportRecord, check_report, file_report
from domain.outbox.events import ReportFiled
from domain.outbox.unit_of_work import unit_of_work
from domain.posts.visibility import require_visible_post


async def report_post(
    engine: AsyncEngine, reporter_id: uuid.UUID, post_id: uuid.UUID, *, reason: str, note: str
) -> ReportRecord:
    """File or update ``reporter_id``'s open report of a visible post not theirs; return it. Raises
    ValidationError or PostNotFoundError."""
    note = check_report(reason, note)
    async with unit_of_work(engine) as uow:
        conn = uow.conn
        post = await require_visible_post(conn, post_id, reporter_id, write=True)
        if post.author_id == reporter_id:
            raise ValidationError("id", "You cannot report your own post.")
        report = await file_report(
            conn, reporter_id, user_id=post.author_id, post_id=post_id, reason=reason, note=note
        )
        await uow.record(ReportFiled(report.id, "post"))
    return report
