"""Use case: delete a comment (its author or the post's author); replies go with it."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.counters import Delta, add_deltas
from domain.db import AnyRow
from domain.engagement.errors import CommentNotFoundError, NotCommentModeratorError
from domain.moderation.account_locks import lock_active
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import CommentDeleted
from domain.outbox.unit_of_work import unit_of_work
from domain.visibility.predicates import is_live


@dataclass(frozen=True, slots=True)
class CommentDeletion:
    """``deleted`` comments now (0: already) under ``post_id``."""

    deleted: int
    post_id: uuid.UUID


async def delete_comment(
    engine: AsyncEngine,
    actor_id: uuid.UUID,
    comment_id: uuid.UUID,
    *,
    counter_shards: int,
    dispatcher: Dispatcher | None = None,
) -> CommentDeletion:
    """Soft-delete a comment (with a top-level one's replies) by its or the post's author, with
    counter and ``comment.deleted``. Raises CommentNotFoundError or NotCommentModeratorError."""
    async with unit_of_work(engine, dispatcher) as uow:
        conn = uow.conn
        row = (
            await conn.execute(
                text(
                    "SELECT c.post_id, c.author_id, c.deleted_at, p.author_id AS post_author,"
                    " p.deleted_at AS post_deleted_at,"
                    " pc.author_id AS parent_author"
                    " FROM comments c JOIN posts p ON p.id = c.post_id"
                    " LEFT JOIN comments pc ON pc.id = c.parent_id"
                    " WHERE c.id = :id FOR UPDATE OF c FOR KEY SHARE OF p"
                ),
                {"id": comment_id},
            )
        ).first()
        if row is None or row.post_deleted_at is not None:  # a deleted post's: gone with it
            raise CommentNotFoundError()
        if actor_id not in (row.author_id, row.post_author):
            raise NotCommentModeratorError()
        if row.deleted_at is not None:
            return CommentDeletion(0, row.post_id)
        deleted = (
            await conn.execute(
                text(
                    "UPDATE comments SET deleted_at = now()"
                    f" WHERE (id = :id OR parent_id = :id) AND {is_live()}"
                    " RETURNING id, author_id, parent_id"
                ),
                {"id": comment_id},
            )
        ).all()
        counted = await _counted(conn, deleted, row.parent_author)
        await uow.record(CommentDeleted(comment_id, row.post_id, len(deleted)))
        await add_deltas(conn, [Delta(row.post_id, "comments", -counted)], shards=counter_shards)
    return CommentDeletion(len(deleted), row.post_id)


async def _counted(
    conn: AsyncConnection, deleted: Sequence[AnyRow], parent_author: uuid.UUID | None
) -> int:
    """How many of the ``deleted`` rows the ``comments`` counter counted (active authors, under an
    active parent)."""
    if not deleted:
        return 0
    top = next((r.author_id for r in deleted if r.parent_id is None), parent_author)
    ids = {r.author_id for r in deleted} | ({top} if top else set())
    # FOR KEY SHARE: a concurrent ban waits or is seen, so the counter drops by what it counted.
    active = await lock_active(conn, ids)
    return sum(
        1 for r in deleted if r.author_id in active and (r.parent_id is None or top in active)
    )
