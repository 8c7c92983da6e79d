"""The ranked feed's signal consumers and explore's trending posts (docs/api/explore.md "Explore").
Each is recorded or withdrawn idempotently at its event's time; an engagement counts when the
velocity first records it, so a rerun never counts twice (but may miss one after a failure:
accepted)."""

from __future__ import annotations

import uuid

from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import utcnow
from domain.explore.ports import FAMILIES, Trending
from domain.feed.ports import Engagement, RankingSignals
from domain.feed.ranking import time_of_uuid7
from domain.feed.ranking_queries import KIND_SQL
from domain.outbox.events import (
    AccountDeletionRequested,
    CommentCreated,
    CommentDeleted,
    LikeCreated,
    LikeRemoved,
    PostDeleted,
    UserStatusChanged,
)
from domain.outbox.process import Consumer
from domain.reads import fetch_rows
from domain.visibility.predicates import is_live

# Nothing recorded if the engagement is gone (jobs run in any order).
_LIKED_KIND = text(
    f"SELECT {KIND_SQL} FROM posts WHERE id = :post"
    " AND EXISTS (SELECT 1 FROM likes WHERE post_id = :post AND user_id = :ref)"
)
_COMMENTED_KIND = text(
    f"SELECT {KIND_SQL} FROM posts WHERE id = :post"
    f" AND EXISTS (SELECT 1 FROM comments WHERE id = :ref AND {is_live()})"
)


_AUTHORS_POSTS = "SELECT id FROM posts WHERE author_id = $1 AND id = ANY($2::uuid[])"


def ranking_consumer(
    engine: AsyncEngine, signals: RankingSignals, trending: Trending | None = None
) -> Consumer:
    """The ``ranking`` consumer: likes and comments recorded or withdrawn; PostDeleted,
    UserStatusChanged and AccountDeletionRequested drop posts from ``trending`` (if kept)."""

    async def record(
        still_there: TextClause,
        ref_id: uuid.UUID,
        post_id: uuid.UUID,
        actor: uuid.UUID,
        author: uuid.UUID,
        ref: str,
        event_id: uuid.UUID,
    ) -> None:
        async with engine.connect() as conn:
            kind: str | None = await conn.scalar(still_there, {"post": post_id, "ref": ref_id})
        if kind is None:  # the post, or the like or comment, is gone: nothing to rank
            return
        now = utcnow()
        at = time_of_uuid7(event_id)
        new = await signals.record(
            Engagement(
                actor=actor,
                post_id=post_id,
                author_id=author,
                kind=kind,
                ref=ref,
                at=at,
            ),
            now=now,
        )
        if new and trending is not None:
            await trending.bump(post_id, kind, at, now)

    async def withdraw(post_id: uuid.UUID, ref: str) -> None:
        at = await signals.withdraw(post_id, ref)
        if at is not None and trending is not None:
            await trending.withdraw(post_id, at, utcnow())

    async def forget_author(author_id: uuid.UUID) -> None:
        if trending is None:
            return
        now = utcnow()
        pooled = {p for f in FAMILIES for p, _ in await trending.top(f, 1_000_000, now)}
        if pooled:
            rows = await fetch_rows(engine, _AUTHORS_POSTS, author_id, list(pooled))
            await trending.remove([r[0] for r in rows])

    async def like_created(e: LikeCreated, event_id: uuid.UUID) -> None:
        await record(
            _LIKED_KIND, e.user_id, e.post_id, e.user_id, e.author_id, f"l:{e.user_id}", event_id
        )

    async def like_removed(e: LikeRemoved, _: uuid.UUID) -> None:
        await withdraw(e.post_id, f"l:{e.user_id}")

    async def comment_created(e: CommentCreated, event_id: uuid.UUID) -> None:
        await record(
            _COMMENTED_KIND,
            e.comment_id,
            e.post_id,
            e.author_id,
            e.post_author_id,
            f"c:{e.comment_id}",
            event_id,
        )

    async def comment_deleted(e: CommentDeleted, _: uuid.UUID) -> None:
        await withdraw(e.post_id, f"c:{e.comment_id}")

    async def post_deleted(e: PostDeleted, _: uuid.UUID) -> None:
        if trending is not None:
            await trending.remove([e.post_id])

    async def status_changed(e: UserStatusChanged, _: uuid.UUID) -> None:
        if e.status != "active":
            await forget_author(e.user_id)

    async def deletion_requested(e: AccountDeletionRequested, _: uuid.UUID) -> None:
        await forget_author(e.user_id)

    return {
        LikeCreated: like_created,
        LikeRemoved: like_removed,
        CommentCreated: comment_created,
        CommentDeleted: comment_deleted,
        PostDeleted: post_deleted,
        UserStatusChanged: status_changed,
        AccountDeletionRequested: deletion_requested,
    }
