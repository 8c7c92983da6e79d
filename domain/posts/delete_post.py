"""Use case: delete one's own post (soft delete; the worker then removes it from every
cached feed, and reads drop it meanwhile)."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import Delta, add_deltas
from domain.outbox.append import append_event
from domain.outbox.dispatch import Dispatcher, dispatch_after_commit
from domain.posts.errors import NotPostAuthorError, PostNotFoundError


async def delete_post(
    engine: AsyncEngine,
    actor_id: uuid.UUID,
    post_id: uuid.UUID,
    *,
    counter_shards: int,
    dispatcher: Dispatcher | None = None,
) -> bool:
    """Soft-delete ``post_id`` if ``actor_id`` wrote it; return True if deleted now.

    Idempotent for the author (a second delete returns False). One transaction with
    the ``posts`` counter (-1) and a ``post.deleted`` outbox row ``{post_id,
    author_id}``, dispatched after the commit; its consumer
    (``domain.feed.remove_post``) removes the post from the author's stores and from
    the cached feeds of the author's active followers. Raises
    PostNotFoundError (no such post) or NotPostAuthorError.
    """
    async with engine.begin() as conn:
        row = (
            await conn.execute(
                text("SELECT author_id, deleted_at FROM posts WHERE id = :id FOR UPDATE"),
                {"id": post_id},
            )
        ).first()
        if row is None:
            raise PostNotFoundError()
        if row.author_id != actor_id:
            raise NotPostAuthorError()
        if row.deleted_at is not None:
            return False
        await conn.execute(
            text("UPDATE posts SET deleted_at = now() WHERE id = :id"), {"id": post_id}
        )
        event_id = await append_event(
            conn,
            "post.deleted",
            post_id,
            {"post_id": str(post_id), "author_id": str(actor_id)},
            dispatched_by_caller=dispatcher is not None,
        )
        await add_deltas(conn, [Delta(actor_id, "posts", -1)], shards=counter_shards)
    await dispatch_after_commit(dispatcher, event_id, "post.deleted")
    return True
