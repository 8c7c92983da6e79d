"""Accepting every pending follow request of an account turning public, inside update_profile's
transaction (docs/seeds/chroma-architecture.md "Private accounts")."""

from __future__ import annotations

import uuid

from sqlalchemy import text

from domain.counters import Delta, add_deltas
from domain.db import new_id
from domain.moderation.account_locks import lock_active
from domain.outbox.events import FollowCreated
from domain.outbox.unit_of_work import UnitOfWork, outbox_insert_sql
from domain.visibility.predicates import is_live

_TAKE = text(
    """
    DELETE FROM follow_requests r WHERE r.target_id = :target
    RETURNING r.requester_id, r.created_at, r.id
    """
)

_EVENTS = outbox_insert_sql(
    FollowCreated,
    source="f JOIN wanted w ON w.follower = f.follower_id",
    aggregate="f.id",
    event_id="w.event_id",
    payload="w.payload",
    delay="w.delay",
)

# The follows and their follow.created events, only for rows actually inserted.
_FOLLOW_ALL = text(
    f"""
    WITH wanted AS (
        SELECT * FROM unnest(CAST(:ids AS uuid[]), CAST(:followers AS uuid[]),
                             CAST(:event_ids AS uuid[]), CAST(:payloads AS jsonb[]),
                             CAST(:delays AS int[]))
                      AS t(id, follower, event_id, payload, delay)
    ), f AS (
        INSERT INTO follows (id, follower_id, followee_id, source)
        SELECT id, follower, CAST(:target AS uuid), 'profile' FROM wanted ORDER BY id
        ON CONFLICT (follower_id, followee_id) WHERE {is_live()} DO NOTHING
        RETURNING id, follower_id
    ), event AS (
        {_EVENTS}
    )
    SELECT follower_id FROM f
    """
)


async def accept_pending_requests(
    uow: UnitOfWork, target_id: uuid.UUID, *, counter_shards: int
) -> list[uuid.UUID]:
    """Turn every pending request to ``target_id`` into a follow in the caller's unit of work (four
    statements); return new followers, oldest first. The caller must update the target's
    ``users`` row first."""
    conn = uow.conn
    taken = (await conn.execute(_TAKE, {"target": target_id})).all()
    if not taken:
        return []
    # FOR KEY SHARE: a concurrent ban of a requester waits, or is seen.
    active = await lock_active(conn, [r.requester_id for r in taken])
    followers = [
        r.requester_id
        for r in sorted(taken, key=lambda r: (r.created_at, r.id))
        if r.requester_id in active
    ]
    if not followers:
        return []
    events = {f: await uow.record(FollowCreated(f, target_id), key="event") for f in followers}
    inserted = set(
        (
            await conn.execute(
                _FOLLOW_ALL,
                {
                    "target": target_id,
                    "ids": [new_id() for _ in followers],
                    "followers": followers,
                    "event_ids": [events[f].id for f in followers],
                    "payloads": [events[f].payload for f in followers],
                    "delays": [events[f].delay for f in followers],
                },
            )
        ).scalars()
    )
    accepted = [f for f in followers if f in inserted]
    uow.written(*(events[f] for f in accepted))
    deltas = [Delta(target_id, "followers", len(accepted))]
    deltas += [Delta(f, "following", 1) for f in accepted]
    await add_deltas(conn, deltas, shards=counter_shards)
    return accepted
