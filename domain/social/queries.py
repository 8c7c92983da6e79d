"""Reads of the follow graph: keyset-paginated lists and batch flag reads for dataloaders."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.counters import read_counts
from domain.keyset import Position, walk
from domain.reads import fetch_rows
from domain.visibility.predicates import is_active, is_live


@dataclass(frozen=True, slots=True)
class FollowEdge:
    """One entry of a followers/following list: the other user and the follow's position."""

    user_id: uuid.UUID
    position: Position


@dataclass(frozen=True, slots=True)
class FollowPage:
    """A page of a follow list, newest first; ``has_next`` says whether more follow."""

    edges: list[FollowEdge]
    has_next: bool


#: No block either way between ``u`` and the viewer (NULL: anonymous), so pages stay full.
_NOT_BLOCKED = """
        AND NOT EXISTS (SELECT 1 FROM blocks b
                        WHERE (b.blocker_id = u.id AND b.blocked_id = CAST(:viewer AS uuid))
                           OR (b.blocker_id = CAST(:viewer AS uuid) AND b.blocked_id = u.id))
"""

_LIST_SQL = {
    "followers": f"""
        SELECT f.follower_id, f.created_at, f.id FROM follows f
        JOIN users u ON u.id = f.follower_id AND {is_active("u")}
        WHERE f.followee_id = :user AND {is_live("f")} {{after}}
        """
    + _NOT_BLOCKED
    + """
        ORDER BY {order} LIMIT :limit
    """,
    "following": f"""
        SELECT f.followee_id, f.created_at, f.id FROM follows f
        JOIN users u ON u.id = f.followee_id AND {is_active("u")}
        WHERE f.follower_id = :user AND {is_live("f")} {{after}}
        """
    + _NOT_BLOCKED
    + """
        ORDER BY {order} LIMIT :limit
    """,
}


async def follow_list(
    conn: AsyncConnection,
    direction: Literal["followers", "following"],
    user_id: uuid.UUID,
    *,
    first: int,
    after: Position | None = None,
    viewer_id: uuid.UUID | None = None,
    backward: bool = False,
) -> FollowPage:
    """Up to ``first`` live followers (or followees), newest first, keyset (created_at, id), without
    inactive or blocked accounts. ``backward``: the ``first`` before ``after``."""
    condition, order = walk("f.created_at, f.id", newest_first=True, backward=backward)
    sql = _LIST_SQL[direction].format(after=f"AND {condition}" if after else "", order=order)
    params: dict[str, object] = {"user": user_id, "limit": first + 1, "viewer": viewer_id}
    if after:
        params["ts"], params["id"] = after
    rows = (await conn.execute(text(sql), params)).all()[: first + 1]
    more = len(rows) > first
    rows = rows[:first][::-1] if backward else rows[:first]
    edges = [FollowEdge(r[0], (r[1], r[2])) for r in rows]
    return FollowPage(edges, has_next=more)


async def _probed(
    db: AsyncConnection | AsyncEngine, where: str, me: uuid.UUID, user_ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    """The keys of ``user_ids`` with a row ``FROM {where}`` (``$1`` is ``me``): one index probe per
    key, so no plan scans all of ``me``'s rows."""
    rows = await fetch_rows(
        db,
        "SELECT k.id FROM unnest(CAST($2 AS uuid[])) AS k(id)"
        f" CROSS JOIN LATERAL (SELECT 1 FROM {where} LIMIT 1) x",
        me,
        list(user_ids),
    )
    return {r[0] for r in rows}


async def followees_among(
    db: AsyncConnection | AsyncEngine, me: uuid.UUID, user_ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    """The ``user_ids`` that ``me`` follows."""
    return await _probed(
        db,
        f"follows WHERE follower_id = $1 AND followee_id = k.id AND {is_live()}",
        me,
        user_ids,
    )


async def followers_among(
    db: AsyncConnection | AsyncEngine, me: uuid.UUID, user_ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    """The ``user_ids`` that follow ``me``."""
    return await _probed(
        db,
        f"follows WHERE followee_id = $1 AND follower_id = k.id AND {is_live()}",
        me,
        user_ids,
    )


async def blocked_among(
    db: AsyncConnection | AsyncEngine, me: uuid.UUID, user_ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    """The ``user_ids`` with a block either way with ``me``, one statement."""
    rows = await fetch_rows(
        db,
        "SELECT k.id FROM unnest(CAST($2 AS uuid[])) AS k(id) WHERE EXISTS ("
        " SELECT 1 FROM blocks WHERE blocker_id = $1 AND blocked_id = k.id)"
        " OR EXISTS (SELECT 1 FROM blocks WHERE blocker_id = k.id AND blocked_id = $1)",
        me,
        list(user_ids),
    )
    return {r[0] for r in rows}


async def muted_among(
    db: AsyncConnection | AsyncEngine, me: uuid.UUID, user_ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    """The subset of ``user_ids`` that ``me`` muted (:func:`_probed`)."""
    return await _probed(db, "mutes WHERE muter_id = $1 AND muted_id = k.id", me, user_ids)


#: The viewer's blocked and muted accounts, newest first, active ones only.
_RELATION_SQL = {
    "blocked": f"""
        SELECT r.blocked_id, r.created_at FROM blocks r
        JOIN users u ON u.id = r.blocked_id AND {is_active("u")}
        WHERE r.blocker_id = :user {{after}}
        ORDER BY {{order}} LIMIT :limit
    """,
    "muted": f"""
        SELECT r.muted_id, r.created_at FROM mutes r
        JOIN users u ON u.id = r.muted_id AND {is_active("u")}
        WHERE r.muter_id = :user {{after}}
        ORDER BY {{order}} LIMIT :limit
    """,
}
_RELATION_KEY = {"blocked": "r.created_at, r.blocked_id", "muted": "r.created_at, r.muted_id"}


async def relation_list(
    conn: AsyncConnection,
    kind: Literal["blocked", "muted"],
    user_id: uuid.UUID,
    *,
    first: int,
    after: Position | None = None,
    backward: bool = False,
) -> FollowPage:
    """Up to ``first`` accounts ``user_id`` blocked or muted (``kind``), newest first, one
    statement. ``backward``: before ``after``."""
    condition, order = walk(_RELATION_KEY[kind], newest_first=True, backward=backward)
    sql = _RELATION_SQL[kind].format(after=f"AND {condition}" if after else "", order=order)
    params: dict[str, object] = {"user": user_id, "limit": first + 1}
    if after:
        params["ts"], params["id"] = after
    rows = (await conn.execute(text(sql), params)).all()
    page = rows[:first][::-1] if backward else rows[:first]
    edges = [FollowEdge(r[0], (r[1], r[0])) for r in page]
    return FollowPage(edges, has_next=len(rows) > first)


async def follow_counts(
    conn: AsyncConnection, user_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, tuple[int, int]]:
    """``{user_id: (followers, following)}`` from the counter shards."""
    counts = await read_counts(conn, user_ids, ("followers", "following"))
    return {u: (counts[(u, "followers")], counts[(u, "following")]) for u in user_ids}


async def requested_among(
    db: AsyncConnection | AsyncEngine, me: uuid.UUID, user_ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    """The ``user_ids`` ``me`` has a pending request to."""
    return await _probed(
        db, "follow_requests WHERE requester_id = $1 AND target_id = k.id", me, user_ids
    )


_REQUESTS_SQL = f"""
    SELECT r.requester_id, r.created_at, r.id FROM follow_requests r
    JOIN users u ON u.id = r.requester_id AND {is_active("u")}
    WHERE r.target_id = :user {{after}}
    ORDER BY {{order}} LIMIT :limit
"""


async def follow_request_list(
    conn: AsyncConnection,
    target_id: uuid.UUID,
    *,
    first: int,
    after: Position | None = None,
    backward: bool = False,
) -> FollowPage:
    """Up to ``first`` pending requests to ``target_id`` from active users, newest first
    (``backward``: before ``after``)."""
    condition, order = walk("r.created_at, r.id", newest_first=True, backward=backward)
    sql = _REQUESTS_SQL.format(after=f"AND {condition}" if after else "", order=order)
    params: dict[str, object] = {"user": target_id, "limit": first + 1}
    if after:
        params["ts"], params["id"] = after
    rows = (await conn.execute(text(sql), params)).all()
    page = rows[:first][::-1] if backward else rows[:first]
    edges = [FollowEdge(r[0], (r[1], r[2])) for r in page]
    return FollowPage(edges, has_next=len(rows) > first)
