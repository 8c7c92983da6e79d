"""PostgreSQL reads of the feed: fan-out targets, rebuild sources, pull authors, the SQL home
feed."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.feed.timelines import Entry, time_of
from domain.keyset import Position
from domain.reads import fetch_rows
from domain.visibility.predicates import is_active, is_live


async def active_followers_page(
    conn: AsyncConnection,
    author_id: uuid.UUID,
    *,
    active_since: dt.datetime,
    after: Position | None,
    limit: int,
) -> tuple[list[uuid.UUID], Position | None]:
    """Up to ``limit`` followers active since ``active_since``, and the keyset to continue (None:
    done)."""
    where = "AND (f.created_at, f.id) < (:ts, :id)" if after else ""
    params: dict[str, object] = {"author": author_id, "since": active_since, "limit": limit}
    if after:
        params["ts"], params["id"] = after
    rows = (
        await conn.execute(
            text(
                f"""
                SELECT f.created_at, f.id, f.follower_id,
                       {is_active("u")} AND u.last_active_at >= :since AS target
                FROM follows f JOIN users u ON u.id = f.follower_id
                WHERE f.followee_id = :author AND {is_live("f")} {where}
                ORDER BY f.created_at DESC, f.id DESC LIMIT :limit
                """
            ),
            params,
        )
    ).all()
    last = (rows[-1][0], rows[-1][1]) if len(rows) == limit else None
    return [r.follower_id for r in rows if r.target], last


async def author_recent_entries(
    conn: AsyncConnection,
    author_id: uuid.UUID,
    *,
    limit: int,
    since: dt.datetime | None = None,
    before: Entry | None = None,
) -> list[Entry]:
    """The author's newest ``limit`` live posts, optionally since ``since`` and before
    ``before``."""
    sql = f"SELECT created_at, id FROM posts WHERE author_id = :a AND {is_live()}"
    params: dict[str, object] = {"a": author_id, "limit": limit}
    if since is not None:
        sql += " AND created_at >= :since"
        params["since"] = since
    if before is not None:
        sql += " AND (created_at, id) < (:ts, :id)"
        params["ts"], params["id"] = time_of(before.score), before.post_id
    rows = await conn.execute(text(sql + " ORDER BY created_at DESC, id DESC LIMIT :limit"), params)
    return [Entry.of(ts, pk) for ts, pk in rows]


_HOME_SQL = f"""
    WITH authors AS (
        SELECT followee_id AS id FROM follows WHERE follower_id = $1 AND {is_live()}
        UNION SELECT CAST($1 AS uuid)
    )
    SELECT p.created_at, p.id FROM authors a
    CROSS JOIN LATERAL (
        SELECT created_at, id FROM posts
        WHERE author_id = a.id AND {is_live()} {{bound}}
        ORDER BY created_at{{desc}}, id{{desc}} LIMIT $2
    ) p
    ORDER BY p.created_at{{desc}}, p.id{{desc}} LIMIT $2
"""
_AUTHORS_SQL = f"""
    SELECT p.created_at, p.id FROM unnest(CAST($1 AS uuid[])) AS a(id)
    CROSS JOIN LATERAL (
        SELECT created_at, id FROM posts
        WHERE author_id = a.id AND {is_live()} {{bound}}
        ORDER BY created_at{{desc}}, id{{desc}} LIMIT $2
    ) p
    ORDER BY p.created_at{{desc}}, p.id{{desc}} LIMIT $2
"""


def _walk(sql: str, bound: Entry | None, rising: bool) -> tuple[str, tuple[object, ...]]:
    """``sql`` past ``bound`` ($3, $4), newest first, or ``rising`` oldest first; and its
    arguments."""
    args: tuple[object, ...] = ()
    condition = ""
    if bound is not None:
        condition = f"AND (created_at, id) {'>' if rising else '<'} ($3, $4)"
        args = (time_of(bound.score), bound.post_id)
    return sql.format(bound=condition, desc="" if rising else " DESC"), args


async def home_entries_sql(
    db: AsyncConnection | AsyncEngine,
    viewer_id: uuid.UUID,
    *,
    before: Entry | None,
    limit: int,
    rising: bool = False,
) -> list[Entry]:
    """The newest ``limit`` live posts of the viewer and followees strictly before ``before``
    (``rising``: the oldest strictly newer, or of all if ``before`` is None; oldest first). One
    statement; ``db`` a connection or engine."""
    sql, args = _walk(_HOME_SQL, before, rising)
    rows = await fetch_rows(db, sql, viewer_id, limit, *args)
    return [Entry.of(ts, pk) for ts, pk in rows]


async def authors_entries_sql(
    db: AsyncConnection | AsyncEngine,
    author_ids: Sequence[uuid.UUID],
    *,
    before: Entry | None,
    limit: int,
    rising: bool = False,
) -> list[Entry]:
    """The newest ``limit`` live posts of ``author_ids`` before ``before`` (``rising`` as
    :func:`home_entries_sql`), one statement."""
    sql, args = _walk(_AUTHORS_SQL, before, rising)
    rows = await fetch_rows(db, sql, list(author_ids), limit, *args)
    return [Entry.of(ts, pk) for ts, pk in rows]


#: The pull authors the viewer ($1) follows (a few dozen at most, by construction).
PULL_AUTHORS_SQL = (
    "SELECT m.author_id FROM author_feed_modes m JOIN follows f"
    f" ON f.followee_id = m.author_id AND f.follower_id = $1 AND {is_live('f')}"
    " WHERE m.mode = 'pull'"
)


async def followed_pull_authors(
    db: AsyncConnection | AsyncEngine, viewer_id: uuid.UUID
) -> list[uuid.UUID]:
    """The pull authors the viewer follows."""
    rows = await fetch_rows(db, PULL_AUTHORS_SQL, viewer_id)
    return [r[0] for r in rows]


async def follows_now(
    conn: AsyncConnection, follower_id: uuid.UUID, followee_id: uuid.UUID
) -> bool:
    """Whether ``follower_id`` follows ``followee_id`` now (a live row)."""
    found = await conn.scalar(
        text(
            "SELECT EXISTS (SELECT 1 FROM follows WHERE follower_id = :a AND followee_id = :b"
            f" AND {is_live()})"
        ),
        {"a": follower_id, "b": followee_id},
    )
    return bool(found)
