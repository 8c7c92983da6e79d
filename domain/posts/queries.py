"""Reads of posts: batch reads by id (dataloaders) and an author's posts by keyset."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.keyset import Position, walk
from domain.reads import fetch_rows
from domain.visibility.predicates import is_live


@dataclass(frozen=True, slots=True)
class PostRecord:
    """A post: ``media`` as stored, ``state`` (``processing``, ``published``, ``failed``,
    ``removed``) with ``failure_reason``, ``edited_at`` (None: never edited)."""

    id: uuid.UUID
    author_id: uuid.UUID
    caption: str
    media: list[dict[str, Any]]
    created_at: dt.datetime
    deleted_at: dt.datetime | None
    state: str
    failure_reason: str | None
    edited_at: dt.datetime | None

    @property
    def position(self) -> Position:
        """The post's keyset position (created_at, id): feeds and lists order by it."""
        return (self.created_at, self.id)


#: The columns :func:`to_post` maps, in order.
POST_COLUMNS = (
    "id, author_id, caption, media, created_at, deleted_at, state, failure_reason, edited_at"
)
_COLUMNS = POST_COLUMNS


def to_post(row: Any) -> PostRecord:
    """Map a row selected with the post columns to a :class:`PostRecord`."""
    return PostRecord(*row)


async def posts_by_ids(
    db: AsyncConnection | AsyncEngine, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, PostRecord]:
    """``{id: PostRecord}`` (deleted included), one statement."""
    if not ids:
        return {}
    rows = await fetch_rows(
        db, f"SELECT {_COLUMNS} FROM posts WHERE id = ANY(CAST($1 AS uuid[]))", list(set(ids))
    )
    return {r[0]: to_post(r) for r in rows}


async def posts_of_author(
    conn: AsyncConnection,
    author_id: uuid.UUID,
    *,
    first: int,
    after: Position | None = None,
    unpublished: bool = False,
    backward: bool = False,
) -> tuple[list[PostRecord], bool]:
    """Up to ``first`` live posts, newest first, and whether more follow; published only unless
    ``unpublished``. ``backward``: just newer than ``after``."""
    condition, order = walk("created_at, id", newest_first=True, backward=backward)
    where = f"AND {condition}" if after else ""
    if not unpublished:
        where += " AND state = 'published'"
    params: dict[str, Any] = {"author": author_id, "limit": first + 1}
    if after:
        params["ts"], params["id"] = after
    rows = (
        await conn.execute(
            text(
                f"SELECT {_COLUMNS} FROM posts WHERE author_id = :author"
                f" AND {is_live()} {where}"
                f" ORDER BY {order} LIMIT :limit"
            ),
            params,
        )
    ).all()
    page = rows[:first][::-1] if backward else rows[:first]
    return [to_post(r) for r in page], len(rows) > first


@dataclass(frozen=True, slots=True)
class PostRevision:
    """An earlier caption: written at ``written_at``, replaced at ``replaced_at``."""

    id: uuid.UUID
    post_id: uuid.UUID
    caption: str
    written_at: dt.datetime
    replaced_at: dt.datetime

    @property
    def position(self) -> Position:
        """Its keyset position in the post's history, (replaced_at, id), newest first."""
        return (self.replaced_at, self.id)


_REVISION_COLUMNS = "id, post_id, caption, written_at, replaced_at"


async def revisions_page(
    conn: AsyncConnection,
    post_id: uuid.UUID,
    *,
    first: int,
    after: Position | None = None,
    backward: bool = False,
) -> tuple[list[PostRevision], bool]:
    """Up to ``first`` earlier captions, newest first (keyset (replaced_at, id); ``backward``), and
    whether more follow."""
    condition, order = walk("replaced_at, id", newest_first=True, backward=backward)
    where = f"AND {condition}" if after else ""
    params: dict[str, Any] = {"post": post_id, "limit": first + 1}
    if after:
        params["ts"], params["id"] = after
    rows = (
        await conn.execute(
            text(
                f"SELECT {_REVISION_COLUMNS} FROM post_revisions WHERE post_id = :post {where}"
                f" ORDER BY {order} LIMIT :limit"
            ),
            params,
        )
    ).all()
    page = rows[:first][::-1] if backward else rows[:first]
    return [PostRevision(*r) for r in page], len(rows) > first


async def first_revisions(
    db: AsyncConnection | AsyncEngine,
    post_ids: Sequence[uuid.UUID],
    *,
    first: int,
    from_end: bool = False,
) -> dict[uuid.UUID, tuple[list[PostRevision], bool]]:
    """The first (``from_end``: last) page of each post's history and whether more exist, one
    statement."""
    order = "replaced_at, id" if from_end else "replaced_at DESC, id DESC"
    rows = await fetch_rows(
        db,
        f"""
        SELECT {_REVISION_COLUMNS} FROM (
            SELECT r.*, row_number() OVER (PARTITION BY post_id ORDER BY {order}) n
            FROM post_revisions r WHERE post_id = ANY(CAST($1 AS uuid[]))
        ) r WHERE n <= $2 ORDER BY post_id, replaced_at DESC, id DESC
        """,
        list(post_ids),
        first + 1,
    )
    grouped: dict[uuid.UUID, list[PostRevision]] = {p: [] for p in post_ids}
    for r in rows:
        grouped[r[1]].append(PostRevision(*r))
    if from_end:
        # at most ``first`` + 1 from the end: the page is the last ``first`` of them
        return {p: (v[1:] if len(v) > first else v, len(v) > first) for p, v in grouped.items()}
    return {p: (v[:first], len(v) > first) for p, v in grouped.items()}
