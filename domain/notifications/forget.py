"""Removing what an account notified others of when a block, ban or mute hides it, in the caller's
transaction; each returns unread-counter deltas. Nothing removed comes back
(docs/api/visibility.md "Who sees what")."""

from __future__ import annotations

import uuid

from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncConnection

from domain.counters import Delta
from domain.notifications.like_groups import refresh_like_groups, row_shows_unread
from domain.notifications.queries import UNREAD_KIND

_PAIR = "(n.recipient_id = :a AND {actor} = :b) OR (n.recipient_id = :b AND {actor} = :a)"
_ANYONE = "{actor} = :a"
_ONE_WAY = "n.recipient_id = :b AND {actor} = :a"


def _statements(who: str) -> tuple[str, str]:
    # Single-actor notifications go; like notifications lose that person and are recounted.
    deleted = f"""
        DELETE FROM notifications n
        WHERE n.kind <> 'like' AND ({who.format(actor="n.actor_id")})
        RETURNING n.recipient_id, n.count, n.read_at
    """
    left = f"""
        DELETE FROM notification_actors m USING notifications n
        WHERE n.id = m.notification_id AND n.kind = 'like' AND ({who.format(actor="m.actor_id")})
        RETURNING n.id
    """
    return deleted, left


_BETWEEN = tuple(text(s) for s in _statements(_PAIR))
_OF_ACTOR = tuple(text(s) for s in _statements(_ANYONE))
_FROM_TO = tuple(text(s) for s in _statements(_ONE_WAY))


async def forget_between(conn: AsyncConnection, a: uuid.UUID, b: uuid.UUID) -> list[Delta]:
    """Remove what ``a`` and ``b`` notified each other of; return the deltas."""
    return await _forget(conn, _BETWEEN, {"a": a, "b": b})


async def forget_actor(conn: AsyncConnection, actor_id: uuid.UUID) -> list[Delta]:
    """Remove what ``actor_id`` notified anyone of; return the deltas."""
    return await _forget(conn, _OF_ACTOR, {"a": actor_id})


async def forget_from(
    conn: AsyncConnection, actor_id: uuid.UUID, recipient_id: uuid.UUID
) -> list[Delta]:
    """Remove what ``actor_id`` notified ``recipient_id`` of (a mute); return the deltas."""
    return await _forget(conn, _FROM_TO, {"a": actor_id, "b": recipient_id})


async def _forget(
    conn: AsyncConnection, statements: tuple[TextClause, ...], params: dict[str, uuid.UUID]
) -> list[Delta]:
    deleted_sql, left_sql = statements
    deltas = [
        Delta(r.recipient_id, UNREAD_KIND, -1)
        for r in await conn.execute(deleted_sql, params)
        if row_shows_unread(r)
    ]
    groups = {r[0] for r in await conn.execute(left_sql, params)}
    _, regrouped = await refresh_like_groups(conn, groups)
    return deltas + regrouped
