"""Batch readers of the facts the visibility rule needs: what the dataloaders call.

Each reads many keys in one statement, so a page of any size costs the same number
of round trips (design.md "GraphQL API conventions").
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from domain.engagement.add_comment import CommentRecord
from domain.engagement.queries import comments_by_ids
from domain.identity.queries import UserRecord, users_by_ids
from domain.posts.queries import PostRecord, posts_by_ids
from domain.social.queries import blocked_among, followees_among
from domain.visibility.sql import (
    BLOCK_PARTNERS,
    hidden_comments_sql,
    hidden_followers_sql,
    hidden_following_sql,
    hidden_likes_sql,
)


async def block_partners(conn: AsyncConnection, viewer_id: uuid.UUID) -> frozenset[uuid.UUID]:
    """Every account with a block between it and ``viewer_id``, either way (one
    statement through the ``blocks`` primary key and ``blocks_blocked_id_idx``). Most
    accounts have none, and then no count needs correcting for the viewer."""
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
    """``{id: CommentRecord}`` (post, author, parent, ``deleted_at``) for the ids that
    exist."""
    return await comments_by_ids(conn, ids) if ids else {}


async def hidden_post_counts(
    conn: AsyncConnection, post_ids: Sequence[uuid.UUID], partners: Collection[uuid.UUID]
) -> dict[uuid.UUID, tuple[int, int]]:
    """``{post id: (likes, comments)}`` that block ``partners`` hide from a viewer: the
    part of each counter that viewer's lists leave out (sql.hidden_likes_sql,
    sql.hidden_comments_sql). One statement; none when there are no partners."""
    if not post_ids or not partners:
        return {p: (0, 0) for p in post_ids}
    rows = await conn.execute(
        text(
            f"""
            SELECT p.id, {hidden_likes_sql("p.id", ":partners")},
                   {hidden_comments_sql("p.id", ":partners")}
            FROM unnest(CAST(:ids AS uuid[])) AS p(id)
            """
        ),
        {"ids": list(dict.fromkeys(post_ids)), "partners": list(partners)},
    )
    return {r[0]: (int(r[1]), int(r[2])) for r in rows}


async def hidden_account_counts(
    conn: AsyncConnection, account_ids: Sequence[uuid.UUID], partners: Collection[uuid.UUID]
) -> dict[uuid.UUID, tuple[int, int]]:
    """``{account id: (followers, following)}`` that block ``partners`` hide from a
    viewer (sql.hidden_followers_sql, sql.hidden_following_sql). One statement; none
    when there are no partners."""
    if not account_ids or not partners:
        return {a: (0, 0) for a in account_ids}
    rows = await conn.execute(
        text(
            f"""
            SELECT a.id, {hidden_followers_sql("a.id", ":partners")},
                   {hidden_following_sql("a.id", ":partners")}
            FROM unnest(CAST(:ids AS uuid[])) AS a(id)
            """
        ),
        {"ids": list(dict.fromkeys(account_ids)), "partners": list(partners)},
    )
    return {r[0]: (int(r[1]), int(r[2])) for r in rows}
