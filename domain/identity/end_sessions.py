"""Ending sessions: revoke refresh-token families in PostgreSQL, then tell the session cache
(docs/api/sessions.md "Sessions")."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncConnection

from domain.db import utcnow
from domain.devices.store import end_session_devices
from domain.errors import StoreError
from domain.identity.models import sessions
from domain.identity.session_store import SessionStore

log = logging.getLogger("roost.sessions")


async def revoke_families(
    conn: AsyncConnection, user_id: uuid.UUID, family_ids: Iterable[uuid.UUID] | None = None
) -> list[uuid.UUID]:
    """Revoke ``user_id``'s live tokens of ``family_ids`` (None: all) and their push devices, in the
    caller's transaction; return the families ended."""
    stmt = update(sessions).where(sessions.c.user_id == user_id, sessions.c.revoked_at.is_(None))
    if family_ids is not None:
        stmt = stmt.where(sessions.c.family_id.in_(list(family_ids)))
    rows = await conn.execute(stmt.values(revoked_at=utcnow()).returning(sessions.c.family_id))
    ended = sorted({r.family_id for r in rows})
    await end_session_devices(conn, ended)  # push devices registered in them (by ``sid``)
    return ended


async def announce_ended(
    store: SessionStore | None,
    user_id: uuid.UUID,
    family_ids: Iterable[uuid.UUID],
    *,
    status: str | None = None,
) -> None:
    """After the commit: mark the sessions (or ``status``) ended in the cache and tell the sockets;
    never raises (the cache expires anyway)."""
    family_ids = list(family_ids)
    if store is None or (not family_ids and status is None):
        return
    try:
        await store.end(user_id, family_ids, status=status)
    except StoreError:
        log.error("sessions of %s ended, but the session cache was not told", user_id)
