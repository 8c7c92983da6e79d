"""Batch readers of the visibility facts, one statement per batch (docs/design.md "GraphQL API
conventions")."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.engagement.add_comment import CommentRecord
from domain.engagement.queries import comments_by_ids
from domain.identity.queries import UserRecord, users_by_ids
from domain.posts.queries import PostRecord, posts_by_ids
from domain.reads import fetch_rows
from domain.social.queries import blocked_among, followees_among, muted_among
from domain.visibility.rules import visible_count
from domain.visibility.sql import (
    BLOCK_PARTNERS,
    hidden_comments_sql,
    hidden_followers_sql,
    hidden_following_sql,
    hidden_likes_sql,
)


async def block_partners(conn: AsyncConnection, viewer_id: uuid.UUID) -> frozenset[uuid.UUID]:
    """Every account with a block either way with ``viewer_id``, one statement."""
    rows = await conn.execute(
        text("SELECT unnest(" + BLOCK_PARTNERS.format(viewer=":v") + ")"), {"v": viewer_id}
    )
    return frozenset(r[0] for r in rows)


async def blocks_between(
    conn: AsyncConnection, viewer_id: uuid.UUID, ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    """The subset of ``ids`` with a block between them and ``viewer_id``, either way."""
    return await blocked_among(conn, viewer_id, ids) if ids else set()


async def follows(
    conn: AsyncConnection, viewer_id: uuid.UUID, ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    """The subset of ``ids`` that ``viewer_id`` follows (a live follow)."""
    return await followees_among(conn, viewer_id, ids) if ids else set()


async def mutes(
    conn: AsyncConnection, viewer_id: uuid.UUID, ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    """The subset of ``ids`` that ``viewer_id`` muted."""
    return await muted_among(conn, viewer_id, ids) if ids else set()


async def user_status(
    conn: AsyncConnection, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, UserRecord]:
    """``{id: UserRecord}`` (status, privacy) for the ids that exist."""
    return await users_by_ids(conn, ids)


async def post_state(
    conn: AsyncConnection, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, PostRecord]:
    """``{id: PostRecord}`` (author, ``deleted_at``) for the ids that exist."""
    return await posts_by_ids(conn, ids)


async def comment_state(
    conn: AsyncConnection, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, CommentRecord]:
    """``{id: CommentRecord}`` for the ids that exist."""
    return await comments_by_ids(conn, ids) if ids else {}


#: What each counted kind loses to a viewer's blocks: kind -> scalar SQL over (entity, partners).
_HIDDEN = {
    "likes": hidden_likes_sql,
    "comments": hidden_comments_sql,
    "followers": hidden_followers_sql,
    "following": hidden_following_sql,
}


async def counts_seen_by(
    db: AsyncConnection | AsyncEngine,
    viewer_id: uuid.UUID | None,
    ids: Sequence[uuid.UUID],
    kinds: Sequence[str],
) -> dict[tuple[uuid.UUID, str], int]:
    """``{(id, kind): count}`` as ``viewer_id`` (None: anonymous) sees it (rules.visible_count), one
    statement."""
    out = {(e, k): 0 for e in ids for k in kinds}
    if not ids:
        return out
    hidden = [k for k in kinds if k in _HIDDEN]
    branches = "".join(
        f"""
        UNION ALL
        SELECT e.id, '{k}', -{_HIDDEN[k]("e.id", "p.ids")}
        FROM unnest(CAST($1 AS uuid[])) AS e(id), partners p WHERE cardinality(p.ids) > 0"""
        for k in hidden
    )
    rows = await fetch_rows(
        db,
        f"""
        WITH partners AS (SELECT {BLOCK_PARTNERS.format(viewer="CAST($3 AS uuid)")} AS ids)
        SELECT entity_id, kind, sum(value)::bigint FROM counter_shards
        WHERE entity_id = ANY(CAST($1 AS uuid[])) AND kind = ANY(CAST($2 AS text[]))
        GROUP BY entity_id, kind
        {branches}
        """,
        list(dict.fromkeys(ids)),
        list(kinds),
        viewer_id,
    )
    for entity_id, kind, n in rows:
        out[(entity_id, kind)] += int(n)
    return {key: visible_count(n, 0) for key, n in out.items()}
