"""Use case: unfollow a user (docs/seeds/followers-following.md "Writes": soft delete)."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import Delta, shard_rows, upsert_rows_sql
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import FollowRemoved
from domain.outbox.unit_of_work import outbox_insert_sql, unit_of_work
from domain.social.cancel_follow_request import cancel_ctes, record_cancel
from domain.social.errors import SelfFollowError
from domain.visibility.predicates import is_active, is_live

# One statement: end the live follow (and a request), then its event and counters, only while
# both are active under FOR KEY SHARE (docs/architecture/counters.md "Counters").
_UNFOLLOW = text(
    f"""
    WITH active AS (
        SELECT count(*) AS n FROM (
            SELECT 1 FROM users WHERE id IN (:follower, :followee) AND {is_active()}
            ORDER BY id FOR KEY SHARE
        ) u
    ), f AS (
        UPDATE follows SET deleted_at = now()
        WHERE follower_id = :follower AND followee_id = :followee AND {is_live()}
          AND (SELECT n FROM active) = 2
        RETURNING id
    ), event AS (
        {outbox_insert_sql(FollowRemoved, source="f", aggregate="f.id")}
    ), counted AS (
        {upsert_rows_sql("EXISTS (SELECT 1 FROM f)")}
    ), {cancel_ctes()}
    SELECT (SELECT id FROM f) AS follow_id, (SELECT id FROM cancelled) AS request_id
    """
)


async def unfollow_user(
    engine: AsyncEngine,
    follower_id: uuid.UUID,
    followee_id: uuid.UUID,
    *,
    counter_shards: int,
    dispatcher: Dispatcher | None = None,
) -> bool:
    """Soft-delete the live follow or withdraw a pending request; True if either happened.
    Idempotent: concurrent unfollows drop counters once; inactive pairs are left. Raises
    SelfFollowError; an unknown user returns False."""
    if follower_id == followee_id:
        raise SelfFollowError()
    async with unit_of_work(engine, dispatcher) as uow:
        event = await uow.record(FollowRemoved(follower_id, followee_id), key="event")
        cancel = await record_cancel(uow, follower_id, followee_id)
        row = (
            await uow.conn.execute(
                _UNFOLLOW,
                {
                    **event.params,
                    **cancel.params,
                    "follower": follower_id,
                    "followee": followee_id,
                    **shard_rows(
                        [Delta(followee_id, "followers", -1), Delta(follower_id, "following", -1)],
                        shards=counter_shards,
                    ),
                },
            )
        ).one()
        if row.follow_id is not None:
            uow.written(event)
        if row.request_id is not None:
            uow.written(cancel)
    return row.follow_id is not None or row.request_id is not None
