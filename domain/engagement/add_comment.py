"""Use case: comment on a post, or reply to a top-level comment (one level)."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import Delta, add_deltas
from domain.db import new_id
from domain.errors import ValidationError
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import CommentCreated
from domain.outbox.unit_of_work import unit_of_work
from domain.posts.visibility import require_visible_parent, require_visible_post
from domain.text import COMMENT_MAX, clean_text


@dataclass(frozen=True, slots=True)
class CommentRecord:
    """A comment; ``parent_id`` is the top-level comment a reply answers (None for one)."""

    id: uuid.UUID
    post_id: uuid.UUID
    author_id: uuid.UUID
    parent_id: uuid.UUID | None
    body: str
    created_at: dt.datetime
    deleted_at: dt.datetime | None = None


COMMENT_COLUMNS = "id, post_id, author_id, parent_id, body, created_at, deleted_at"


async def add_comment(
    engine: AsyncEngine,
    author_id: uuid.UUID,
    post_id: uuid.UUID,
    body: str,
    *,
    parent_id: uuid.UUID | None = None,
    counter_shards: int,
    dispatcher: Dispatcher | None = None,
) -> CommentRecord:
    """Add a comment (or reply to ``parent_id``) with its counter and ``comment.created``, accounts
    and parent ``FOR KEY SHARE``. Raises ValidationError (body, or a
    parent not a visible top-level comment of the post) or PostNotFoundError."""
    body = clean_text("body", body, max_len=COMMENT_MAX)
    if not body.strip():
        raise ValidationError("body", "A comment cannot be empty.")
    async with unit_of_work(engine, dispatcher) as uow:
        conn = uow.conn
        post = await require_visible_post(conn, post_id, author_id, write=True)
        parent_author = None
        if parent_id is not None:
            parent = await require_visible_parent(conn, parent_id, author_id)
            if parent is None or parent[0] != post_id or parent[2] is not None:
                raise ValidationError(
                    "parentId", "Replies answer a top-level comment of the same post."
                )
            parent_author = parent[1]
        row = (
            await conn.execute(
                text(
                    "INSERT INTO comments (id, post_id, author_id, parent_id, body)"
                    " VALUES (:id, :post, :author, :parent, :body)"
                    f" RETURNING {COMMENT_COLUMNS}"
                ),
                {
                    "id": new_id(),
                    "post": post_id,
                    "author": author_id,
                    "parent": parent_id,
                    "body": body,
                },
            )
        ).one()
        comment = CommentRecord(*row)
        await uow.record(
            CommentCreated(
                comment.id, post_id, author_id, post.author_id, parent_id, parent_author, body
            )
        )
        await add_deltas(conn, [Delta(post_id, "comments", 1)], shards=counter_shards)
    return comment
