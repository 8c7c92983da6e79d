"""Reports: the record, the moderators' queue, and closing an account's or post's open reports."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from domain.db import new_id
from domain.errors import ValidationError
from domain.keyset import Position, walk
from domain.moderation.models import REASONS
from domain.text import clean_text

COLUMNS = (
    "id, reporter_id, subject, user_id, post_id, reason, note, status, created_at,"
    " updated_at, resolved_at, resolved_by"
)


@dataclass(frozen=True, slots=True)
class ReportRecord:
    """A report of a ``subject`` (``post``: ``post_id`` by ``user_id``; ``user``), its reason and
    ``status`` (open, actioned, dismissed)."""

    id: uuid.UUID
    reporter_id: uuid.UUID | None  # None: filed by Roost (moderation.models.SYSTEM_REASONS)
    subject: str
    user_id: uuid.UUID
    post_id: uuid.UUID | None
    reason: str
    note: str
    status: str
    created_at: dt.datetime
    updated_at: dt.datetime
    resolved_at: dt.datetime | None
    resolved_by: uuid.UUID | None

    @property
    def position(self) -> Position:
        """The keyset position of the queue."""
        return (self.created_at, self.id)


def to_report(row: Sequence[Any]) -> ReportRecord:
    """Map a row of :data:`COLUMNS` to a :class:`ReportRecord`."""
    return ReportRecord(*row)


async def reports_page(
    conn: AsyncConnection,
    status: str,
    *,
    first: int,
    after: Position | None = None,
    backward: bool = False,
) -> tuple[list[ReportRecord], bool]:
    """Up to ``first`` reports of ``status``, oldest first, and whether more follow (keyset, one
    statement). ``backward``: before ``after``."""
    condition, order = walk("created_at, id", newest_first=False, backward=backward)
    where = f"AND {condition}" if after else ""
    params: dict[str, object] = {"status": status, "limit": first + 1}
    if after:
        params["ts"], params["id"] = after
    rows = (
        await conn.execute(
            text(
                f"SELECT {COLUMNS} FROM reports WHERE status = :status {where}"
                f" ORDER BY {order} LIMIT :limit"
            ),
            params,
        )
    ).all()
    page = rows[:first][::-1] if backward else rows[:first]
    return [to_report(r) for r in page], len(rows) > first


async def reports_by_ids(
    conn: AsyncConnection, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, ReportRecord]:
    """The reports among ``ids`` that exist, by id (one statement)."""
    if not ids:
        return {}
    rows = (
        await conn.execute(
            text(f"SELECT {COLUMNS} FROM reports WHERE id = ANY(:ids)"), {"ids": list(ids)}
        )
    ).all()
    return {r.id: r for r in map(to_report, rows)}


async def close_reports(
    conn: AsyncConnection,
    moderator_id: uuid.UUID,
    *,
    user_id: uuid.UUID | None = None,
    post_id: uuid.UUID | None = None,
) -> int:
    """Mark ``actioned`` the open reports of account ``user_id`` (and its posts) or of ``post_id``;
    return how many."""
    column, value = ("user_id", user_id) if user_id is not None else ("post_id", post_id)
    result = await conn.execute(
        text(
            f"UPDATE reports SET status = 'actioned', resolved_at = now(), resolved_by = :m"
            f" WHERE {column} = :v AND status = 'open'"
        ),
        {"m": moderator_id, "v": value},
    )
    return result.rowcount or 0


#: Longest note a report may carry, in code points.
NOTE_MAX = 1_000


def check_report(reason: str, note: str) -> str:
    """The cleaned note (NFC, ≤ :data:`NOTE_MAX`, no NUL); raises ValidationError."""
    if reason not in REASONS:
        raise ValidationError("reason", f"The reason is one of {', '.join(REASONS)}.")
    return clean_text("note", note, max_len=NOTE_MAX)


#: Reporting again while open updates the reason and note (partial unique indexes).
_FILE = {
    "post": f"""
        INSERT INTO reports (id, reporter_id, subject, user_id, post_id, reason, note)
        VALUES (:id, :reporter, 'post', :user, :post, :reason, :note)
        ON CONFLICT (reporter_id, post_id) WHERE status = 'open' AND post_id IS NOT NULL
        DO UPDATE SET reason = EXCLUDED.reason, note = EXCLUDED.note,
            updated_at = CASE WHEN (reports.reason, reports.note)
                = (EXCLUDED.reason, EXCLUDED.note) THEN reports.updated_at ELSE now() END
        RETURNING {COLUMNS}
    """,
    "user": f"""
        INSERT INTO reports (id, reporter_id, subject, user_id, reason, note)
        VALUES (:id, :reporter, 'user', :user, :reason, :note)
        ON CONFLICT (reporter_id, user_id) WHERE status = 'open' AND post_id IS NULL
        DO UPDATE SET reason = EXCLUDED.reason, note = EXCLUDED.note,
            updated_at = CASE WHEN (reports.reason, reports.note)
                = (EXCLUDED.reason, EXCLUDED.note) THEN reports.updated_at ELSE now() END
        RETURNING {COLUMNS}
    """,
}


async def file_report(
    conn: AsyncConnection,
    reporter_id: uuid.UUID,
    *,
    user_id: uuid.UUID,
    post_id: uuid.UUID | None,
    reason: str,
    note: str,
) -> ReportRecord:
    """Create or update the reporter's open report of the post (or account)."""
    row = (
        await conn.execute(
            text(_FILE["post" if post_id is not None else "user"]),
            {
                "id": new_id(),
                "reporter": reporter_id,
                "user": user_id,
                "post": post_id,
                "reason": reason,
                "note": note,
            },
        )
    ).one()
    return to_report(row)


async def file_system_report(
    conn: AsyncConnection, *, user_id: uuid.UUID, post_id: uuid.UUID, reason: str, note: str
) -> uuid.UUID:
    """File Roost's own open report of the post (``reason`` in SYSTEM_REASONS); return its id."""
    report_id = new_id()
    await conn.execute(
        text(
            "INSERT INTO reports (id, reporter_id, subject, user_id, post_id, reason, note)"
            " VALUES (:id, NULL, 'post', :user, :post, :reason, :note)"
        ),
        {"id": report_id, "user": user_id, "post": post_id, "reason": reason, "note": note},
    )
    return report_id
