"""Use case: change the viewer's display name, bio and privacy."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import NotFoundError
from domain.identity.models import users
from domain.identity.queries import USER_COLUMNS, UserRecord, to_record
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import UserUpdated
from domain.outbox.unit_of_work import unit_of_work
from domain.social.accept_follow_requests import accept_pending_requests
from domain.text import clean_bio, clean_display_name


async def update_profile(
    engine: AsyncEngine,
    user_id: uuid.UUID,
    *,
    display_name: str | None = None,
    bio: str | None = None,
    is_private: bool | None = None,
    counter_shards: int = 16,
    dispatcher: Dispatcher | None = None,
) -> UserRecord:
    """Set whichever of ``display_name`` (1–50), ``bio`` (0–150 code points, NFC) and
    ``is_private`` are given, with ``user.updated``; return the user. ``is_private=False``
    also accepts every pending follow request in the same transaction
    (accept_pending_requests). Raises ValidationError or NotFoundError.
    """
    values: dict[str, Any] = {}
    if display_name is not None:
        values["display_name"] = clean_display_name(display_name)
    if bio is not None:
        values["bio"] = clean_bio(bio)
    if is_private is not None:
        values["is_private"] = is_private
    async with unit_of_work(engine, dispatcher) as uow:
        conn = uow.conn
        stmt = update(users).where(users.c.id == user_id, users.c.status == "active")
        if not values:  # nothing to change: still answer with the current profile
            values["display_name"] = users.c.display_name
        row = (await conn.execute(stmt.values(**values).returning(*USER_COLUMNS))).first()
        if row is None:
            raise NotFoundError("The account does not exist.")
        if is_private is False:
            # After the UPDATE: it holds the row lock that request creation waits for.
            await accept_pending_requests(uow, user_id, counter_shards=counter_shards)
        await uow.append(UserUpdated(user_id, tuple(sorted(values))))
    return to_record(row)
