"""The ranked feed's signal consumers (docs/architecture/home-feed.md "Ranked order"):
likes and comments are recorded, unlikes and deletions withdrawn, each idempotently at
its outbox event's time."""

from __future__ import annotations

import uuid

from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import utcnow
from domain.feed.ports import Engagement, RankingSignals
from domain.feed.ranking import time_of_uuid7
from domain.feed.ranking_queries import KIND_SQL
from domain.outbox.events import CommentCreated, CommentDeleted, LikeCreated, LikeRemoved
from domain.outbox.process import Consumer

# The post's media kind, if the engagement is still there: a like or comment job that
# runs after its unlike or deletion (jobs run in any order), or after the actor's
# account was purged, records nothing.
_LIKED_KIND = text(
    f"SELECT {KIND_SQL} FROM posts WHERE id = :post"
    " AND EXISTS (SELECT 1 FROM likes WHERE post_id = :post AND user_id = :ref)"
)
_COMMENTED_KIND = text(
    f"SELECT {KIND_SQL} FROM posts WHERE id = :post"
    " AND EXISTS (SELECT 1 FROM comments WHERE id = :ref AND deleted_at IS NULL)"
)


def ranking_consumer(engine: AsyncEngine, signals: RankingSignals) -> Consumer:
    """The ``ranking`` consumer (domain.outbox.registry): LikeCreated, LikeRemoved,
    CommentCreated and CommentDeleted; a creation reads the post's media and whether
    the like or comment is still there (one statement)."""

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
        await signals.record(
            Engagement(
                actor=actor,
                post_id=post_id,
                author_id=author,
                kind=kind,
                ref=ref,
                at=time_of_uuid7(event_id),
            ),
            now=utcnow(),
        )

    async def like_created(e: LikeCreated, event_id: uuid.UUID) -> None:
        await record(
            _LIKED_KIND, e.user_id, e.post_id, e.user_id, e.author_id, f"l:{e.user_id}", event_id
        )

    async def like_removed(e: LikeRemoved, _: uuid.UUID) -> None:
        await signals.withdraw(e.post_id, f"l:{e.user_id}")

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
        await signals.withdraw(e.post_id, f"c:{e.comment_id}")

    return {
        LikeCreated: like_created,
        LikeRemoved: like_removed,
        CommentCreated: comment_created,
        CommentDeleted: comment_deleted,
    }
