"""Use cases: notify of a follow (past ``follow_daily_cap`` per UTC day, via the next day's
FOLLOW_DIGEST), a follow request, and its approval."""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.counters import Delta, add_deltas
from domain.db import new_id
from domain.locks import advisory_xact_lock
from domain.notifications.config import NotificationConfig
from domain.notifications.queries import COLUMNS, UNREAD_KIND, to_notification
from domain.notifications.store import (
    Changes,
    Draft,
    EventRef,
    eligible_recipients,
    insert_notifications,
    record_source,
    source_recorded,
)
from domain.visibility.predicates import is_active, is_live

#: Namespace of the digests' derived source_event_id (one per UTC day).
DIGEST_NAMESPACE = uuid.UUID("7d0c2a4e-5b1f-4c8e-9a36-0f6f1e3b9d52")


def digest_event_id(day: dt.date) -> uuid.UUID:
    """The source_event_id of ``day``'s follow digests (stable across runs)."""
    return uuid.uuid5(DIGEST_NAMESPACE, f"follow-digest:{day.isoformat()}")


async def _notified_today(
    conn: AsyncConnection, recipient_id: uuid.UUID, day: dt.date
) -> set[uuid.UUID]:
    rows = await conn.execute(
        text(
            "SELECT actor_id FROM notification_sources WHERE recipient_id = :r AND day = :day"
            " AND kind = 'follow' AND outcome = 'notified'"
        ),
        {"r": recipient_id, "day": day},
    )
    return {r[0] for r in rows}


def _outcome(notified: set[uuid.UUID], actor: uuid.UUID, cap: int) -> str:
    if actor in notified:
        return "repeat"
    return "overflow" if len(notified) >= cap else "notified"


async def notify_follow(
    engine: AsyncEngine,
    config: NotificationConfig,
    event: EventRef,
    follower_id: uuid.UUID,
    followee_id: uuid.UUID,
) -> Changes:
    """Handle ``follow.created``: FOLLOW, or an overflow record past the cap (a (recipient, day)
    lock keeps the count exact). Nothing for a gone follow, inactive side, block or handled
    event."""
    kind = "follow"
    async with engine.begin() as conn:
        live = await conn.scalar(
            text(
                "SELECT EXISTS (SELECT 1 FROM follows WHERE follower_id = :a"
                f" AND followee_id = :r AND {is_live()})"
            ),
            {"a": follower_id, "r": followee_id},
        )
        if not live or not await eligible_recipients(conn, follower_id, [followee_id]):
            return Changes()
        if await source_recorded(conn, event, followee_id, kind):
            return Changes()
        cap = config.follow_daily_cap
        outcome = _outcome(await _notified_today(conn, followee_id, event.day), follower_id, cap)
        if outcome == "notified":
            await advisory_xact_lock(conn, f"notify-follow:{event.day.isoformat()}", followee_id)
            notified = await _notified_today(conn, followee_id, event.day)
            outcome = _outcome(notified, follower_id, cap)
        notification_id = new_id() if outcome == "notified" else None
        if not await record_source(
            conn,
            event,
            followee_id,
            kind,
            actor_id=follower_id,
            outcome=outcome,
            notification_id=notification_id,
        ):
            return Changes()
        if notification_id is None:
            return Changes()
        created = await insert_notifications(
            conn,
            event,
            [Draft(followee_id, kind, actor_id=follower_id)],
            counter_shards=config.counter_shards,
            ids=[notification_id],
        )
    return Changes(created=created)


async def notify_follow_request(
    engine: AsyncEngine,
    config: NotificationConfig,
    event: EventRef,
    requester_id: uuid.UUID,
    target_id: uuid.UUID,
) -> Changes:
    """Handle ``follow_request.created``: FOLLOW_REQUEST for the target, once, while pending."""
    async with engine.begin() as conn:
        pending = await conn.scalar(
            text(
                "SELECT EXISTS (SELECT 1 FROM follow_requests"
                " WHERE requester_id = :a AND target_id = :r)"
            ),
            {"a": requester_id, "r": target_id},
        )
        if not pending or not await eligible_recipients(conn, requester_id, [target_id]):
            return Changes()
        created = await insert_notifications(
            conn,
            event,
            [Draft(target_id, "follow_request", actor_id=requester_id)],
            counter_shards=config.counter_shards,
        )
    return Changes(created=created)


async def notify_follow_request_approved(
    engine: AsyncEngine,
    config: NotificationConfig,
    event: EventRef,
    requester_id: uuid.UUID,
    target_id: uuid.UUID,
) -> Changes:
    """Handle ``follow_request.approved``: FOLLOW_REQUEST_APPROVED for the requester, once, while
    live."""
    async with engine.begin() as conn:
        live = await conn.scalar(
            text(
                "SELECT EXISTS (SELECT 1 FROM follows WHERE follower_id = :r"
                f" AND followee_id = :a AND {is_live()})"
            ),
            {"a": target_id, "r": requester_id},
        )
        if not live or not await eligible_recipients(conn, target_id, [requester_id]):
            return Changes()
        created = await insert_notifications(
            conn,
            event,
            [Draft(requester_id, "follow_request_approved", actor_id=target_id)],
            counter_shards=config.counter_shards,
        )
    return Changes(created=created)


_OVERFLOW = text(
    f"""
    SELECT s.recipient_id, count(DISTINCT s.actor_id)::int AS n
    FROM notification_sources s JOIN users u ON u.id = s.recipient_id
    WHERE s.day = :day AND s.outcome = 'overflow' AND {is_active("u")}
    GROUP BY s.recipient_id ORDER BY s.recipient_id
    """
)

_DIGEST = text(
    f"""
    INSERT INTO notifications (id, recipient_id, kind, count, source_event_id, created_at)
    SELECT d.id, d.recipient_id, 'follow_digest', d.n, :event, now()
    FROM unnest(CAST(:ids AS uuid[]), CAST(:recipients AS uuid[]), CAST(:counts AS integer[]))
         AS d(id, recipient_id, n)
    ON CONFLICT (source_event_id, recipient_id, kind)
    DO UPDATE SET count = EXCLUDED.count WHERE notifications.count <> EXCLUDED.count
    RETURNING {COLUMNS}, (xmax = 0) AS inserted
    """
)


async def send_follow_digests(
    engine: AsyncEngine, config: NotificationConfig, day: dt.date
) -> Changes:
    """One FOLLOW_DIGEST per active recipient with overflow on UTC ``day``; return those created.
    Idempotent (a late overflow corrects the count in place)."""
    async with engine.begin() as conn:
        groups = (await conn.execute(_OVERFLOW, {"day": day})).all()
        if not groups:
            return Changes()
        rows = (
            await conn.execute(
                _DIGEST,
                {
                    "event": digest_event_id(day),
                    "ids": [new_id() for _ in groups],
                    "recipients": [g.recipient_id for g in groups],
                    "counts": [g.n for g in groups],
                },
            )
        ).all()
        created = [to_notification(r[:-1]) for r in rows if r[-1]]
        await add_deltas(
            conn,
            [Delta(n.recipient_id, UNREAD_KIND, 1) for n in created],
            shards=config.counter_shards,
        )
    return Changes(created=created)


async def prune_sources(engine: AsyncEngine, before: dt.date) -> int:
    """Delete the per-event records of days before ``before``; return how many."""
    async with engine.begin() as conn:
        result = await conn.execute(
            text("DELETE FROM notification_sources WHERE day < :day"), {"day": before}
        )
    return result.rowcount or 0
