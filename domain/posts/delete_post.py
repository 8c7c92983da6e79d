"""Use case: soft-delete one's own post (the worker then removes it from cached feeds)."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import Delta, add_deltas
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import PostDeleted
from domain.outbox.unit_of_work import UnitOfWork, unit_of_work
from domain.posts.errors import NotPostAuthorError, PostNotFoundError

#: The post, locked for its deletion (by its author or a moderator).
LOCK_FOR_DELETE = text("SELECT author_id, deleted_at FROM posts WHERE id = :id FOR UPDATE")


async def delete_post(
    engine: AsyncEngine,
    actor_id: uuid.UUID,
    post_id: uuid.UUID,
    *,
    counter_shards: int,
    dispatcher: Dispatcher | None = None,
) -> bool:
    """Soft-delete ``post_id`` by its author with counter and ``post.deleted``; True if now (False
    again: idempotent). Raises PostNotFoundError or NotPostAuthorError."""
    async with unit_of_work(engine, dispatcher) as uow:
        row = (await uow.conn.execute(LOCK_FOR_DELETE, {"id": post_id})).first()
        if row is None:
            raise PostNotFoundError()
        if row.author_id != actor_id:
            raise NotPostAuthorError()
        if row.deleted_at is not None:
            return False
        await mark_deleted(uow, post_id, row.author_id, counter_shards=counter_shards)
    return True


async def mark_deleted(
    uow: UnitOfWork,
    post_id: uuid.UUID,
    author_id: uuid.UUID,
    *,
    counter_shards: int,
    by: str = "author",
) -> uuid.UUID:
    """Soft-delete a locked live post (:data:`LOCK_FOR_DELETE`) with the counter and
    ``post.deleted`` ``{post_id, author_id, by}``; return the event's id."""
    conn = uow.conn
    state = await conn.scalar(
        text("UPDATE posts SET deleted_at = now() WHERE id = :id RETURNING state"), {"id": post_id}
    )
    event_id = (await uow.record(PostDeleted(post_id, author_id, by))).id
    if state == "published":
        await add_deltas(conn, [Delta(author_id, "posts", -1)], shards=counter_shards)
    return event_id
