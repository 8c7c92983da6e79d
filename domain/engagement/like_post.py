"""Use cases: like and unlike a post (idempotent; ``likes`` counter exact)."""

from __future__ import annotations

import uuid

from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import Delta, shard_rows, upsert_rows_sql
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import LikeCreated, LikeRemoved
from domain.outbox.unit_of_work import outbox_insert_sql, unit_of_work
from domain.posts.visibility import require_visible_post

# Row, event and counter in one statement; event and counter only on insert.
_LIKE = text(
    f"""
    WITH l AS (
        INSERT INTO likes (post_id, user_id) VALUES (:post, :user)
        ON CONFLICT DO NOTHING RETURNING post_id
    ), event AS (
        {outbox_insert_sql(LikeCreated, source="l", aggregate="l.post_id")}
    ), counted AS (
        {upsert_rows_sql("EXISTS (SELECT 1 FROM l)")}
    )
    SELECT count(*) FROM l
    """
)

_UNLIKE = text(
    f"""
    WITH l AS (
        DELETE FROM likes WHERE post_id = :post AND user_id = :user RETURNING post_id
    ), event AS (
        {outbox_insert_sql(LikeRemoved, source="l", aggregate="l.post_id")}
    ), counted AS (
        {upsert_rows_sql("EXISTS (SELECT 1 FROM l)")}
    )
    SELECT count(*) FROM l
    """
)


# Author and unliker FOR KEY SHARE: an inactive account's unlike must not subtract.
_UNLIKER = text(
    """
    SELECT p.author_id, u.status FROM posts p JOIN users u ON u.id = :u
    WHERE p.id = :p FOR KEY SHARE OF u
    """
)


async def like_post(
    engine: AsyncEngine,
    user_id: uuid.UUID,
    post_id: uuid.UUID,
    *,
    counter_shards: int,
    dispatcher: Dispatcher | None = None,
) -> bool:
    """Like a visible post with ``like.created`` and the counter; True if new. Raises
    PostNotFoundError (also for an inactive user)."""
    return await _write(
        engine,
        _LIKE,
        LikeCreated,
        1,
        user_id,
        post_id,
        counter_shards=counter_shards,
        dispatcher=dispatcher,
        check=True,
    )


async def unlike_post(
    engine: AsyncEngine,
    user_id: uuid.UUID,
    post_id: uuid.UUID,
    *,
    counter_shards: int,
    dispatcher: Dispatcher | None = None,
) -> bool:
    """Remove the user's like; True if there was one. Raises PostNotFoundError as a like does."""
    return await _write(
        engine,
        _UNLIKE,
        LikeRemoved,
        -1,
        user_id,
        post_id,
        counter_shards=counter_shards,
        dispatcher=dispatcher,
        check=False,
    )


async def _write(
    engine: AsyncEngine,
    statement: TextClause,
    event_type: type[LikeCreated] | type[LikeRemoved],
    delta: int,
    user_id: uuid.UUID,
    post_id: uuid.UUID,
    *,
    counter_shards: int,
    dispatcher: Dispatcher | None,
    check: bool,
) -> bool:
    async with unit_of_work(engine, dispatcher) as uow:
        conn = uow.conn
        if check:
            post = await require_visible_post(conn, post_id, user_id, write=True)
            author_id = post.author_id
        else:
            # An unlike of a post no longer visible changes nothing.
            await require_visible_post(conn, post_id, user_id, lock=True)
            row = (await conn.execute(_UNLIKER, {"p": post_id, "u": user_id})).first()
            if row is None or row.status != "active":
                return False
            author_id = row.author_id
        event = await uow.record(event_type(post_id, user_id, author_id), key="event")
        changed = await conn.scalar(
            statement,
            {
                "post": post_id,
                "user": user_id,
                **event.params,
                **shard_rows([Delta(post_id, "likes", delta)], shards=counter_shards),
            },
        )
        if changed:
            uow.written(event)
    return bool(changed)
