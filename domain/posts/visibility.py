"""Who may see (and so like or comment on) a post."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from domain.posts.errors import PostNotFoundError
from domain.posts.queries import PostRecord, to_post

_VISIBLE = text(
    """
    SELECT p.id, p.author_id, p.caption, p.media, p.created_at, p.deleted_at
    FROM posts p JOIN users a ON a.id = p.author_id AND a.status = 'active'
    WHERE p.id = :post AND p.deleted_at IS NULL
      AND NOT EXISTS (
          SELECT 1 FROM blocks b
          WHERE (b.blocker_id = a.id AND b.blocked_id = :viewer)
             OR (b.blocker_id = :viewer AND b.blocked_id = a.id))
      AND (NOT a.is_private OR a.id = :viewer OR EXISTS (
          SELECT 1 FROM follows f
          WHERE f.follower_id = :viewer AND f.followee_id = a.id AND f.deleted_at IS NULL))
    """
)


def visible_post_sql(post: str = ":post", viewer: str = ":viewer") -> str:
    """The statement of :func:`require_visible_post` (the post's columns; no row if it
    is not visible) with the post and viewer as the given SQL expressions, e.g. columns
    of a LATERAL join: for reads that build on the same rule."""
    return _VISIBLE.text.replace(":post", post).replace(":viewer", viewer)


async def require_visible_post(
    conn: AsyncConnection, post_id: uuid.UUID, viewer_id: uuid.UUID
) -> PostRecord:
    """Return the post if ``viewer_id`` may see it: live, by an active author, no block
    either way, and the author public, the viewer, or followed by the viewer.

    Raises PostNotFoundError otherwise (an invisible post is indistinguishable from a
    missing one).
    """
    row = (await conn.execute(_VISIBLE, {"post": post_id, "viewer": viewer_id})).first()
    if row is None:
        raise PostNotFoundError()
    return to_post(row)
