"""The visibility checks writes make in their transaction (SQL twin of
:mod:`domain.visibility.rules`)."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from domain.posts.errors import PostNotFoundError
from domain.posts.queries import PostRecord, to_post
from domain.visibility.sql import visible_comment_sql, visible_post_sql

_VISIBLE = text(visible_post_sql())
_VISIBLE_LOCKED = text(visible_post_sql(lock_viewer=True))
_VISIBLE_POST_LOCKED = text(visible_post_sql(lock_post=True))
_COMMENT_LOCKED = text(visible_comment_sql(lock=True))

__all__ = ["require_visible_parent", "require_visible_post", "visible_post_sql"]


async def require_visible_post(
    conn: AsyncConnection,
    post_id: uuid.UUID,
    viewer_id: uuid.UUID | None,
    *,
    write: bool = False,
    lock: bool = False,
) -> PostRecord:
    """The post if ``viewer_id`` (None: anonymous) may see it; ``write`` also needs the viewer
    active, ``write``/``lock`` share-lock the post. Raises PostNotFoundError."""
    statement = _VISIBLE_LOCKED if write else _VISIBLE_POST_LOCKED if lock else _VISIBLE
    row = (await conn.execute(statement, {"post": post_id, "viewer": viewer_id})).first()
    if row is None:
        raise PostNotFoundError()
    return to_post(row)


async def require_visible_parent(
    conn: AsyncConnection, comment_id: uuid.UUID, viewer_id: uuid.UUID
) -> tuple[uuid.UUID, uuid.UUID, uuid.UUID | None] | None:
    """(post_id, author_id, parent_id) of a visible comment to answer, else None; kept ``FOR KEY
    SHARE``."""
    row = (
        await conn.execute(_COMMENT_LOCKED, {"comment": comment_id, "viewer": viewer_id})
    ).first()
    return (row.post_id, row.author_id, row.parent_id) if row else None
