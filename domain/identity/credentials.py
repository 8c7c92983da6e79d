"""The credential check of signing in: a username and password against the account."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import ValidationError
from domain.identity.models import users
from domain.identity.passwords import verify_password
from domain.identity.queries import USER_COLUMNS, UserRecord, to_record
from domain.text import normalize_username


@dataclass(frozen=True, slots=True)
class Credited:
    """The account whose password checked, and when its purge is due (if deleting)."""

    user: UserRecord
    deletion_due_at: dt.datetime | None


async def check_credentials(engine: AsyncEngine, username: str, password: str) -> Credited | None:
    """The account of ``username`` (case-insensitive) if ``password`` is its password, whatever its
    status; else None, after the same work for every refusal."""
    try:
        canonical = normalize_username(username)
    except ValidationError:
        canonical = None
    row = None
    if canonical is not None and "\x00" not in password:
        async with engine.connect() as conn:
            row = (
                await conn.execute(
                    select(*USER_COLUMNS, users.c.password_hash, users.c.deletion_due_at).where(
                        users.c.username == canonical
                    )
                )
            ).first()
    ok = await verify_password(row.password_hash if row else None, password)
    if not ok or row is None:
        return None
    return Credited(to_record(row), row.deletion_due_at)
