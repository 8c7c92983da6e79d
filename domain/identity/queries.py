"""Reads of accounts, including the batch reads the dataloaders call."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.db import AnyRow
from domain.identity.models import users
from domain.reads import fetch_rows


@dataclass(frozen=True, slots=True)
class UserRecord:
    """A user as the rest of Roost sees it (no password hash, no e-mail)."""

    id: uuid.UUID
    username: str
    display_name: str
    bio: str
    status: str
    created_at: dt.datetime
    is_private: bool = False
    website: str | None = None
    #: The processed avatar (users.avatar: uploadId, blurhash, variants), None: none.
    avatar: dict[str, Any] | None = None

    @property
    def is_visible(self) -> bool:
        """False for banned or deleted accounts, which lists and lookups hide."""
        return self.status == "active"


USER_COLUMNS = (
    users.c.id,
    users.c.username,
    users.c.display_name,
    users.c.bio,
    users.c.status,
    users.c.created_at,
    users.c.is_private,
    users.c.website,
    users.c.avatar,
)

#: The same columns as SQL text, for statements written as text.
USER_SELECT = "id, username, display_name, bio, status, created_at, is_private, website, avatar"


def to_record(row: AnyRow) -> UserRecord:
    """Map a row that includes :data:`USER_COLUMNS` to a :class:`UserRecord`."""
    m = row._mapping
    return UserRecord(
        m["id"],
        m["username"],
        m["display_name"],
        m["bio"],
        m["status"],
        m["created_at"],
        m["is_private"],
        m["website"],
        m["avatar"],
    )


async def users_by_ids(
    db: AsyncConnection | AsyncEngine, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, UserRecord]:
    """``{id: UserRecord}`` for the ids that exist, one statement."""
    if not ids:
        return {}
    rows = await fetch_rows(
        db,
        f"SELECT {USER_SELECT} FROM users WHERE id = ANY(CAST($1 AS uuid[]))",
        list(set(ids)),
    )
    return {r[0]: UserRecord(*r) for r in rows}


async def user_by_username(conn: AsyncConnection, username: str) -> UserRecord | None:
    """Return the user whose canonical username is ``username`` (already lower-cased)."""
    row = (await conn.execute(select(*USER_COLUMNS).where(users.c.username == username))).first()
    return to_record(row) if row else None


@dataclass(frozen=True, slots=True)
class EmailState:
    """An account's e-mail address (None: it has none) and whether it is verified."""

    email: str | None
    verified: bool


async def email_state(db: AsyncConnection | AsyncEngine, user_id: uuid.UUID) -> EmailState:
    """The address of ``user_id`` and whether verified (none for a missing account)."""
    rows = await fetch_rows(
        db, "SELECT email, email_verified_at IS NOT NULL FROM users WHERE id = $1", user_id
    )
    return EmailState(rows[0][0], bool(rows[0][1])) if rows else EmailState(None, False)


@dataclass(frozen=True, slots=True)
class AvatarUploadState:
    """The pending avatar upload: ``processing``, or ``failed`` with ``failure_reason``."""

    upload_id: uuid.UUID
    state: str
    failure_reason: str | None


async def avatar_upload_state(
    db: AsyncConnection | AsyncEngine, user_id: uuid.UUID
) -> AvatarUploadState | None:
    """The state of ``user_id``'s pending avatar upload, or None when there is none."""
    rows = await fetch_rows(
        db,
        "SELECT up.id, up.state, up.failure_reason FROM users u"
        " JOIN uploads up ON up.id = u.avatar_upload_id AND up.owner_id = u.id"
        " WHERE u.id = $1",
        user_id,
    )
    return AvatarUploadState(*rows[0]) if rows else None
