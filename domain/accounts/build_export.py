"""Use case (the worker's): prepare the archive of a data export (README "Account
lifecycle"): one JSON document of the account's profile, posts, comments, likes,
follows both ways, blocks, mutes and notifications, gzip-compressed."""

from __future__ import annotations

import asyncio
import datetime as dt
import gzip
import json
import uuid
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.db import utcnow

#: The archive's format, named in the document so later versions can be told apart.
FORMAT = "roost-export/1"

#: section -> the statement of its rows (each reads one account's rows through an index).
SECTIONS: dict[str, str] = {
    "posts": (
        "SELECT id, caption, media, created_at FROM posts"
        " WHERE author_id = :u AND deleted_at IS NULL ORDER BY created_at, id"
    ),
    "comments": (
        "SELECT id, post_id, parent_id, body, created_at FROM comments"
        " WHERE author_id = :u AND deleted_at IS NULL ORDER BY created_at, id"
    ),
    "likes": "SELECT post_id, created_at FROM likes WHERE user_id = :u ORDER BY created_at",
    "following": (
        "SELECT u.id AS user_id, u.username, f.created_at AS since FROM follows f"
        " JOIN users u ON u.id = f.followee_id"
        " WHERE f.follower_id = :u AND f.deleted_at IS NULL AND u.status = 'active'"
        " ORDER BY f.created_at, f.id"
    ),
    "followers": (
        "SELECT u.id AS user_id, u.username, f.created_at AS since FROM follows f"
        " JOIN users u ON u.id = f.follower_id"
        " WHERE f.followee_id = :u AND f.deleted_at IS NULL AND u.status = 'active'"
        " ORDER BY f.created_at, f.id"
    ),
    "blocks": (
        "SELECT u.id AS user_id, u.username, b.created_at AS since FROM blocks b"
        " JOIN users u ON u.id = b.blocked_id WHERE b.blocker_id = :u ORDER BY b.created_at"
    ),
    "mutes": (
        "SELECT u.id AS user_id, u.username, m.created_at AS since FROM mutes m"
        " JOIN users u ON u.id = m.muted_id WHERE m.muter_id = :u ORDER BY m.created_at"
    ),
    "notifications": (
        "SELECT n.id, n.kind, n.count, a.username AS actor, n.post_id, n.comment_id,"
        " n.created_at, n.read_at FROM notifications n"
        " LEFT JOIN users a ON a.id = n.actor_id AND a.status = 'active'"
        " WHERE n.recipient_id = :u AND n.count > 0 ORDER BY n.created_at, n.id"
    ),
}
_PROFILE = (
    "SELECT id, username, display_name, bio, email, is_private, created_at FROM users WHERE id = :u"
)
_LOCK_PENDING = text(
    "SELECT user_id FROM data_exports WHERE id = :id AND status = 'pending' FOR UPDATE"
)
_STORE = text(
    """
    UPDATE data_exports SET status = 'ready', archive = :archive, size_bytes = :size,
        ready_at = now(), expires_at = now() + make_interval(secs => :keep)
    WHERE id = :id
    """
)


def _json_value(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


async def _rows(conn: AsyncConnection, sql: str, user_id: uuid.UUID) -> list[dict[str, Any]]:
    result = await conn.execute(text(sql), {"u": user_id})
    return [{_camel(k): _json_value(v) for k, v in r._mapping.items()} for r in result]


async def collect_data(conn: AsyncConnection, user_id: uuid.UUID) -> dict[str, Any] | None:
    """The account's data as a JSON-ready document (None if there is no such account),
    read in the caller's snapshot."""
    profile = await _rows(conn, _PROFILE, user_id)
    if not profile:
        return None
    document: dict[str, Any] = {
        "format": FORMAT,
        "exportedAt": _json_value(utcnow()),
        "profile": profile[0],
    }
    for section, sql in SECTIONS.items():
        document[section] = await _rows(conn, sql, user_id)
    return document


def serialise(document: dict[str, Any]) -> bytes:
    """The archive's bytes: the document as compact UTF-8 JSON, gzip-compressed."""
    body = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
    return gzip.compress(body, compresslevel=6)


async def build_export(engine: AsyncEngine, export_id: uuid.UUID, *, keep: dt.timedelta) -> bool:
    """Prepare the archive of ``export_id`` if it is still pending: read the account's
    data in one REPEATABLE READ snapshot, serialise and gzip it, store it with
    ``expires_at`` = now + ``keep``; return True if it was prepared now.

    Idempotent: an export that is ready (or gone: expired, or its account purged) is
    left alone, and two runs at once store one archive (the row is locked). Raises
    DBAPIError (the job retries, then dead-letters).
    """
    async with engine.begin() as conn:
        user_id = await conn.scalar(_LOCK_PENDING, {"id": export_id})
        if user_id is None:
            return False
        async with engine.connect() as reader:
            reader = await reader.execution_options(isolation_level="REPEATABLE READ")
            async with reader.begin():
                document = await collect_data(reader, user_id)
        if document is None:
            return False
        archive = await asyncio.to_thread(serialise, document)  # off the event loop
        await conn.execute(
            _STORE,
            {
                "id": export_id,
                "archive": archive,
                "size": len(archive),
                "keep": keep.total_seconds(),
            },
        )
    return True
