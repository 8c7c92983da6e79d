"""Use case: a moderator closes a report (docs/api/moderation.md "Reports and moderation")."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import ValidationError
from domain.moderation.errors import ReportNotFoundError
from domain.moderation.moderators import require_moderator
from domain.moderation.reports import COLUMNS, ReportRecord, to_report
from domain.outbox.events import ReportResolved
from domain.outbox.unit_of_work import unit_of_work

#: What a moderator may set a report to.
RESOLUTIONS = ("actioned", "dismissed")

_RESOLVE = text(
    f"""
    UPDATE reports SET status = :status, resolved_at = now(), resolved_by = :m
    WHERE id = :id AND status = 'open'
    RETURNING {COLUMNS}
    """
)
_READ = text(f"SELECT {COLUMNS} FROM reports WHERE id = :id")


async def resolve_report(
    engine: AsyncEngine, moderator_id: uuid.UUID, report_id: uuid.UUID, status: str
) -> ReportRecord:
    """Close open report ``report_id`` as ``actioned`` or ``dismissed`` with ``report.resolved``;
    return it (idempotent: a closed one as is). Raises NotModeratorError, ValidationError
    (another status) or ReportNotFoundError."""
    async with unit_of_work(engine) as uow:
        conn = uow.conn
        await require_moderator(conn, moderator_id)  # the role before any of the input
        if status not in RESOLUTIONS:
            raise ValidationError("status", f"A report is resolved as {' or '.join(RESOLUTIONS)}.")
        row = (
            await conn.execute(_RESOLVE, {"status": status, "m": moderator_id, "id": report_id})
        ).first()
        if row is not None:
            await uow.record(ReportResolved(report_id, status))
            return to_report(row)
        row = (await conn.execute(_READ, {"id": report_id})).first()
        if row is None:
            raise ReportNotFoundError()
        return to_report(row)
