"""Writes shared by the notification use cases: eligibility, the idempotent insert with the unread
counter, per-event records."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from domain.counters import Delta, add_deltas
from domain.db import new_id, utcnow
from domain.notifications.queries import (
    COLUMNS,
    UNREAD_KIND,
    NotificationRecord,
    to_notification,
)
from domain.posts.errors import PostNotFoundError
from domain.posts.visibility import require_visible_post
from domain.social.pairs import pair_lock_key
from domain.visibility.predicates import is_active
from domain.visibility.sql import muted_sql


def event_time(event_id: uuid.UUID) -> dt.datetime:
    """The time inside a UUIDv7 (RFC 9562: first 48 bits, Unix ms), so every run sees the same;
    other versions fall back to now."""
    if event_id.version != 7:
        return utcnow()
    ms = event_id.int >> 80
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC)


@dataclass(frozen=True, slots=True)
class EventRef:
    """The outbox event a consumer handles: its id (the idempotency key) and its time."""

    id: uuid.UUID
    at: dt.datetime

    @property
    def day(self) -> dt.date:
        """The event's UTC day (the follow cap and digest count per UTC day)."""
        return self.at.astimezone(dt.UTC).date()

    @classmethod
    def of(cls, event_id: uuid.UUID) -> EventRef:
        """The event of id ``event_id``, timed by the id."""
        return cls(event_id, event_time(event_id))


@dataclass(frozen=True, slots=True)
class Draft:
    """A notification to create for the event being handled."""

    recipient_id: uuid.UUID
    kind: str
    actor_id: uuid.UUID | None = None
    post_id: uuid.UUID | None = None
    comment_id: uuid.UUID | None = None
    count: int = 1


@dataclass
class Changes:
    """Notifications ``created`` (push and publish) and ``updated`` (publish only)."""

    created: list[NotificationRecord] = field(default_factory=list)
    updated: list[NotificationRecord] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.created or self.updated)


_INSERT = text(
    f"""
    INSERT INTO notifications
        (id, recipient_id, kind, actor_id, post_id, comment_id, count, source_event_id,
         created_at)
    SELECT d.*, CAST(:event AS uuid), CAST(:at AS timestamptz)
    FROM unnest(CAST(:ids AS uuid[]), CAST(:recipients AS uuid[]), CAST(:kinds AS text[]),
                CAST(:actors AS uuid[]), CAST(:posts AS uuid[]), CAST(:comments AS uuid[]),
                CAST(:counts AS integer[])) AS d
    ON CONFLICT (source_event_id, recipient_id, kind) DO NOTHING
    RETURNING {COLUMNS}
    """
)


async def insert_notifications(
    conn: AsyncConnection,
    event: EventRef,
    drafts: Sequence[Draft],
    *,
    counter_shards: int,
    ids: Sequence[uuid.UUID] | None = None,
) -> list[NotificationRecord]:
    """Insert ``drafts`` idempotently in the caller's transaction, +1 unread each, in one statement;
    return rows inserted. ``ids`` may fix their ids."""
    if not drafts:
        return []
    rows = (
        await conn.execute(
            _INSERT,
            {
                "event": event.id,
                "at": event.at,
                "ids": list(ids) if ids is not None else [new_id() for _ in drafts],
                "recipients": [d.recipient_id for d in drafts],
                "kinds": [d.kind for d in drafts],
                "actors": [d.actor_id for d in drafts],
                "posts": [d.post_id for d in drafts],
                "comments": [d.comment_id for d in drafts],
                "counts": [d.count for d in drafts],
            },
        )
    ).all()
    created = [to_notification(r) for r in rows]
    await add_deltas(
        conn, [Delta(n.recipient_id, UNREAD_KIND, 1) for n in created], shards=counter_shards
    )
    return created


# Locks first, in their own statement, so the checks' snapshot follows the waits: a block or
# ban is seen, or waits and then removes this notification (domain.notifications.forget).
_SERIALISE = text(
    """
    SELECT (SELECT count(pg_advisory_xact_lock(k))
            FROM (SELECT unnest(CAST(:keys AS bigint[])) AS k ORDER BY 1) s),
           (SELECT status FROM users WHERE id = :actor FOR KEY SHARE)
    """
)

_ELIGIBLE = text(
    f"""
    SELECT u.id FROM users u
    WHERE u.id = ANY(CAST(:ids AS uuid[])) AND {is_active("u")} AND u.id <> :actor
      AND EXISTS (SELECT 1 FROM users a WHERE a.id = :actor AND {is_active("a")})
      AND NOT EXISTS (
          SELECT 1 FROM blocks b
          WHERE (b.blocker_id = u.id AND b.blocked_id = :actor)
             OR (b.blocker_id = :actor AND b.blocked_id = u.id))
      AND NOT {muted_sql("u.id", "CAST(:actor AS uuid)")}
    """
)


async def eligible_recipients(
    conn: AsyncConnection,
    actor_id: uuid.UUID,
    candidates: Iterable[uuid.UUID],
    *,
    post_id: uuid.UUID | None = None,
) -> set[uuid.UUID]:
    """The ``candidates`` that may be notified of ``actor_id``'s act: not the actor, active, no
    block, no mute, seeing ``post_id``. Holds the pair locks and actor ``FOR KEY SHARE`` until
    commit."""
    wanted = list(dict.fromkeys(c for c in candidates if c != actor_id))
    if not wanted:
        return set()
    keys = sorted({pair_lock_key(actor_id, w) for w in wanted})
    await conn.execute(_SERIALISE, {"keys": keys, "actor": actor_id})
    rows = await conn.execute(_ELIGIBLE, {"ids": wanted, "actor": actor_id})
    ok = {r[0] for r in rows}
    if post_id is not None:
        for user_id in list(ok):
            try:
                await require_visible_post(conn, post_id, user_id)
            except PostNotFoundError:
                ok.discard(user_id)
    return ok


async def users_by_usernames(conn: AsyncConnection, names: Iterable[str]) -> dict[str, uuid.UUID]:
    """Return ``{canonical username: id}`` of the active users among ``names``."""
    names = list(dict.fromkeys(names))
    if not names:
        return {}
    rows = await conn.execute(
        text(
            "SELECT username, id FROM users"
            f" WHERE username = ANY(CAST(:names AS text[])) AND {is_active()}"
        ),
        {"names": names},
    )
    return {r[0]: r[1] for r in rows}


async def source_recorded(
    conn: AsyncConnection, event: EventRef, recipient_id: uuid.UUID, kind: str
) -> bool:
    """Whether (event, recipient, kind) was handled already (a job running again)."""
    return bool(
        await conn.scalar(
            text(
                "SELECT EXISTS (SELECT 1 FROM notification_sources WHERE source_event_id = :e"
                " AND recipient_id = :r AND kind = :k)"
            ),
            {"e": event.id, "r": recipient_id, "k": kind},
        )
    )


async def record_source(
    conn: AsyncConnection,
    event: EventRef,
    recipient_id: uuid.UUID,
    kind: str,
    *,
    actor_id: uuid.UUID | None,
    outcome: str,
    notification_id: uuid.UUID | None = None,
) -> bool:
    """Record (event, recipient, kind) done; False if it already was."""
    inserted = await conn.scalar(
        text(
            "INSERT INTO notification_sources"
            " (source_event_id, recipient_id, kind, actor_id, day, outcome, notification_id)"
            " VALUES (:e, :r, :k, :a, :day, :outcome, :n)"
            " ON CONFLICT DO NOTHING RETURNING true"
        ),
        {
            "e": event.id,
            "r": recipient_id,
            "k": kind,
            "a": actor_id,
            "day": event.day,
            "outcome": outcome,
            "n": notification_id,
        },
    )
    return bool(inserted)
