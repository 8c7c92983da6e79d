"""The outbox topics the ranked feed's signals consume (README "Home feed", Ranked
order): likes and comments feed the post's velocity, the author's average rate and the
actor's proximity and media preference (:mod:`domain.feed.ranking_signals`); unlikes
and comment deletions take theirs out of the velocity. Each handler is idempotent; the
time of an engagement is its outbox event's (a UUIDv7), so a replay records the same."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import utcnow
from domain.feed.ranking import RankingConfig
from domain.feed.ranking_queries import KIND_SQL
from domain.feed.ranking_signals import Engagement, RankingSignals, time_of_uuid7
from domain.feedstore import FeedRedis
from domain.outbox.process import EVENT_ID_KEY, Handler

_KIND = text(f"SELECT {KIND_SQL} FROM posts WHERE id = :id")


def ranking_handlers(
    engine: AsyncEngine, store: FeedRedis, config: RankingConfig
) -> dict[str, Handler]:
    """Return ``{topic: handler}`` for like.created, like.removed, comment.created and
    comment.deleted; each reads at most the post's media (one statement)."""
    signals = RankingSignals(store, config)

    async def kind_of(post_id: uuid.UUID) -> str | None:
        async with engine.connect() as conn:
            return await conn.scalar(_KIND, {"id": post_id})

    async def record(p: Mapping[str, Any], actor: str, author: str, ref: str) -> None:
        post_id = uuid.UUID(p["post_id"])
        kind = await kind_of(post_id)
        if kind is None:  # the post is gone (purged): nothing to rank
            return
        await signals.record(
            Engagement(
                actor=uuid.UUID(p[actor]),
                post_id=post_id,
                author_id=uuid.UUID(p[author]),
                kind=kind,
                ref=ref,
                at=time_of_uuid7(uuid.UUID(p[EVENT_ID_KEY])),
            ),
            now=utcnow(),
        )

    async def like_created(p: Mapping[str, Any]) -> None:
        await record(p, "user_id", "author_id", f"l:{p['user_id']}")

    async def like_removed(p: Mapping[str, Any]) -> None:
        await signals.withdraw(uuid.UUID(p["post_id"]), f"l:{p['user_id']}")

    async def comment_created(p: Mapping[str, Any]) -> None:
        await record(p, "author_id", "post_author_id", f"c:{p['comment_id']}")

    async def comment_deleted(p: Mapping[str, Any]) -> None:
        await signals.withdraw(uuid.UUID(p["post_id"]), f"c:{p['comment_id']}")

    return {
        "like.created": like_created,
        "like.removed": like_removed,
        "comment.created": comment_created,
        "comment.deleted": comment_deleted,
    }
