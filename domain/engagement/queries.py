"""Reads of likes, comments and hashtags, keyset-paginated on (created_at, id)."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.engagement.add_comment import COMMENT_COLUMNS, CommentRecord
from domain.engagement.hashtags import fold_tag
from domain.keyset import Position, walk
from domain.reads import fetch_rows
from domain.visibility.predicates import is_active, is_live


async def likers_page(
    conn: AsyncConnection,
    post_id: uuid.UUID,
    *,
    first: int,
    after: Position | None,
    viewer_id: uuid.UUID | None = None,
    backward: bool = False,
) -> tuple[list[tuple[uuid.UUID, dt.datetime]], bool]:
    """Likers newest first ``[(user_id, liked_at)]`` and has_next, without those ``viewer_id`` may
    not list; ``backward``: before ``after``."""
    condition, order = walk("l.created_at, l.user_id", newest_first=True, backward=backward)
    where = f"AND {condition}" if after else ""
    params: dict[str, Any] = {"post": post_id, "limit": first + 1, "viewer": viewer_id}
    if after:
        params["ts"], params["id"] = after
    rows = (
        await conn.execute(
            text(
                "SELECT l.user_id, l.created_at FROM likes l"
                f" JOIN users u ON u.id = l.user_id AND {is_active('u')}"
                f" WHERE l.post_id = :post {where}"
                " AND NOT EXISTS (SELECT 1 FROM blocks b"
                " WHERE (b.blocker_id = u.id AND b.blocked_id = CAST(:viewer AS uuid))"
                " OR (b.blocker_id = CAST(:viewer AS uuid) AND b.blocked_id = u.id))"
                f" ORDER BY {order} LIMIT :limit"
            ),
            params,
        )
    ).all()
    page = rows[:first][::-1] if backward else rows[:first]
    return [(r[0], r[1]) for r in page], len(rows) > first


async def top_comments_page(
    conn: AsyncConnection,
    post_id: uuid.UUID,
    *,
    first: int,
    after: Position | None,
    backward: bool = False,
) -> tuple[list[CommentRecord], bool]:
    """Live top-level comments, oldest first; ``backward``: the page before ``after``."""
    return await _comments_page(
        conn,
        "post_id = :key AND parent_id IS NULL",
        post_id,
        first=first,
        after=after,
        backward=backward,
    )


async def replies_page(
    conn: AsyncConnection,
    parent_id: uuid.UUID,
    *,
    first: int,
    after: Position | None,
    backward: bool = False,
) -> tuple[list[CommentRecord], bool]:
    """Live replies to a comment, oldest first (``backward``: before ``after``)."""
    return await _comments_page(
        conn, "parent_id = :key", parent_id, first=first, after=after, backward=backward
    )


async def _comments_page(
    conn: AsyncConnection,
    where: str,
    key: uuid.UUID,
    *,
    first: int,
    after: Position | None,
    backward: bool = False,
) -> tuple[list[CommentRecord], bool]:
    """Live comments matching ``where`` (``:key``), oldest first, keyset after ``after``."""
    condition, order = walk("created_at, id", newest_first=False, backward=backward)
    params: dict[str, Any] = {"key": key, "limit": first + 1}
    if after:
        where += f" AND {condition}"
        params["ts"], params["id"] = after
    rows = (
        await conn.execute(
            text(
                f"SELECT {COMMENT_COLUMNS} FROM comments"
                f" WHERE {where} AND {is_live()} ORDER BY {order} LIMIT :limit"
            ),
            params,
        )
    ).all()
    page = rows[:first][::-1] if backward else rows[:first]
    return [CommentRecord(*r) for r in page], len(rows) > first


async def first_replies(
    db: AsyncConnection | AsyncEngine,
    parent_ids: Sequence[uuid.UUID],
    *,
    first: int,
    from_end: bool = False,
) -> dict[uuid.UUID, tuple[list[CommentRecord], bool]]:
    """The first (``from_end``: last) ``first`` replies of each parent and whether more exist, one
    statement."""
    order = "created_at DESC, id DESC" if from_end else "created_at, id"
    rows = await fetch_rows(
        db,
        f"""
        SELECT {COMMENT_COLUMNS} FROM (
            SELECT c.*, row_number() OVER (PARTITION BY parent_id ORDER BY {order}) n
            FROM comments c
            WHERE parent_id = ANY(CAST($1 AS uuid[])) AND {is_live()}
        ) r WHERE n <= $2 ORDER BY parent_id, created_at, id
        """,
        list(parent_ids),
        first + 1,
    )
    grouped: dict[uuid.UUID, list[CommentRecord]] = {p: [] for p in parent_ids}
    for r in rows:
        rec = CommentRecord(*r)
        grouped[rec.parent_id].append(rec)  # type: ignore[index]
    if from_end:
        # at most ``first`` + 1 from the end: the page is the last ``first`` of them
        return {p: (v[1:] if len(v) > first else v, len(v) > first) for p, v in grouped.items()}
    return {p: (v[:first], len(v) > first) for p, v in grouped.items()}


async def comments_by_ids(
    db: AsyncConnection | AsyncEngine, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, CommentRecord]:
    """``{id: CommentRecord}`` (deleted ones included, flagged), one statement."""
    rows = await fetch_rows(
        db,
        f"SELECT {COMMENT_COLUMNS} FROM comments WHERE id = ANY(CAST($1 AS uuid[]))",
        list(set(ids)),
    )
    return {r[0]: CommentRecord(*r) for r in rows}


async def liked_among(
    db: AsyncConnection | AsyncEngine, user_id: uuid.UUID, post_ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    """The ``post_ids`` the user liked, one statement."""
    rows = await fetch_rows(
        db,
        "SELECT k.id FROM unnest(CAST($2 AS uuid[])) AS k(id) CROSS JOIN LATERAL ("
        " SELECT 1 FROM likes WHERE post_id = k.id AND user_id = $1 LIMIT 1) x",
        user_id,
        list(post_ids),
    )
    return {r[0] for r in rows}


async def hashtag_posts_page(
    conn: AsyncConnection,
    name: str,
    *,
    first: int,
    after: Position | None,
    backward: bool = False,
) -> tuple[list[uuid.UUID], bool]:
    """Live post ids tagged ``name``, newest first, and has_next; visibility is the caller's."""
    condition, order = walk("ph.created_at, ph.post_id", newest_first=True, backward=backward)
    where = f"AND {condition}" if after else ""
    params: dict[str, Any] = {"name": fold_tag(name), "limit": first + 1}
    if after:
        params["ts"], params["id"] = after
    rows = (
        await conn.execute(
            text(
                "SELECT ph.post_id FROM hashtags h"
                " JOIN post_hashtags ph ON ph.hashtag_id = h.id"
                f" JOIN posts p ON p.id = ph.post_id AND {is_live('p')}"
                f" WHERE h.name = :name {where}"
                f" ORDER BY {order} LIMIT :limit"
            ),
            params,
        )
    ).all()
    page = rows[:first][::-1] if backward else rows[:first]
    return [r[0] for r in page], len(rows) > first
