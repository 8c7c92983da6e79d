"""Use cases: like and unlike a post (idempotent; ``likes`` counter exact)."""

from __future__ import annotations

import json
import uuid

from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import Delta, shard_rows, upsert_rows_sql
from domain.db import new_id
from domain.outbox.dispatch import REDRIVE_AFTER_S, Dispatcher, dispatch_after_commit
from domain.posts.visibility import require_visible_post

# The like row, its outbox event and the post's counter in one statement; the event and
# the counter only if a row was inserted (a second like changes nothing).
_LIKE = text(
    f"""
    WITH l AS (
        INSERT INTO likes (post_id, user_id) VALUES (:post, :user)
        ON CONFLICT DO NOTHING RETURNING post_id
    ), event AS (
        INSERT INTO outbox (id, topic, aggregate_id, payload, available_at)
        SELECT :event_id, 'like.created', l.post_id, CAST(:payload AS jsonb),
               now() + make_interval(secs => :redrive) FROM l
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
        INSERT INTO outbox (id, topic, aggregate_id, payload, available_at)
        SELECT :event_id, 'like.removed', l.post_id, CAST(:payload AS jsonb),
               now() + make_interval(secs => :redrive) FROM l
    ), counted AS (
        {upsert_rows_sql("EXISTS (SELECT 1 FROM l)")}
    )
    SELECT count(*) FROM l
    """
)


# The post's author and the unliker's status, read under FOR KEY SHARE: a ban of the
# unliker either waits for this unlike or is seen by it (only active accounts' likes
# are counted, so an inactive account's unlike must not subtract).
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
    """Like a post the user can see; return True if the like is new.

    One transaction: the ``likes`` row (primary key (post, user), so concurrent likes by
    one user insert once), a ``like.created`` event {post_id, user_id, author_id} and
    the post's ``likes`` counter +1. Raises PostNotFoundError if the post is missing or
    not visible to the user (deleted, blocked, private and not followed), or the user's
    account is not active (read under ``FOR KEY SHARE``: a concurrent ban waits for the
    like or is seen by it, so the counter only counts active accounts' likes).
    """
    return await _write(
        engine,
        _LIKE,
        "like.created",
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
    """Remove the user's like; return True if there was one. A second unlike, or an
    unlike racing it, subtracts nothing (the DELETE matches once). Never raises for a
    post that is gone: there is nothing to undo. An account that is not active (banned,
    deleted) unlikes nothing: its likes are not counted while it is inactive."""
    return await _write(
        engine,
        _UNLIKE,
        "like.removed",
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
    topic: str,
    delta: int,
    user_id: uuid.UUID,
    post_id: uuid.UUID,
    *,
    counter_shards: int,
    dispatcher: Dispatcher | None,
    check: bool,
) -> bool:
    event_id = new_id()
    async with engine.begin() as conn:
        if check:
            post = await require_visible_post(conn, post_id, user_id, write=True)
            author_id = post.author_id
        else:
            row = (await conn.execute(_UNLIKER, {"p": post_id, "u": user_id})).first()
            if row is None or row.status != "active":
                return False
            author_id = row.author_id
        changed = await conn.scalar(
            statement,
            {
                "post": post_id,
                "user": user_id,
                "event_id": event_id,
                "redrive": REDRIVE_AFTER_S if dispatcher is not None else 0,
                "payload": json.dumps(
                    {"post_id": str(post_id), "user_id": str(user_id), "author_id": str(author_id)}
                ),
                **shard_rows([Delta(post_id, "likes", delta)], shards=counter_shards),
            },
        )
    if changed:
        await dispatch_after_commit(dispatcher, event_id, topic)
    return bool(changed)
