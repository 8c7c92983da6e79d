"""Use case: change the viewer's display name and bio."""

from __future__ import annotations

import uuid

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import NotFoundError
from domain.identity.models import users
from domain.identity.queries import USER_COLUMNS, UserRecord, to_record
from domain.outbox.append import append_event
from domain.text import clean_bio, clean_display_name


async def update_profile(
    engine: AsyncEngine,
    user_id: uuid.UUID,
    *,
    display_name: str | None = None,
    bio: str | None = None,
) -> UserRecord:
    """Set whichever of ``display_name`` (1–50) and ``bio`` (0–150 code points, NFC) are
    given and return the user.

    Raises ValidationError (nothing written) or NotFoundError if the user is gone.
    """
    values: dict[str, str] = {}
    if display_name is not None:
        values["display_name"] = clean_display_name(display_name)
    if bio is not None:
        values["bio"] = clean_bio(bio)
    async with engine.begin() as conn:
        stmt = update(users).where(users.c.id == user_id, users.c.status == "active")
        if not values:  # nothing to change: still answer with the current profile
            values["display_name"] = users.c.display_name
        row = (await conn.execute(stmt.values(**values).returning(*USER_COLUMNS))).first()
        if row is None:
            raise NotFoundError("The account does not exist.")
        await append_event(conn, "user.updated", user_id, {"fields": sorted(values)})
        return to_record(row)
