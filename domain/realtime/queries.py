"""The read behind ``postEngagementChanged``: many (post, viewer) pairs in one statement, batched
per process."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.posts.queries import PostRecord
from domain.visibility.sql import (
    BLOCK_PARTNERS,
    hidden_comments_sql,
    hidden_likes_sql,
    visible_post_sql,
)

Pair = tuple[uuid.UUID, uuid.UUID]  # (post id, viewer id)

_PARTNERS = BLOCK_PARTNERS.format(viewer="r.viewer")

# Per pair: the post if visible, with its shard-summed counters less block-hidden ones.
_SNAPSHOTS = text(
    f"""
    SELECT r.i, v.*,
        greatest(0, (SELECT coalesce(sum(value), 0) FROM counter_shards
                     WHERE entity_id = v.id AND kind = 'likes')
                    - {hidden_likes_sql("v.id", "p.partners")})::bigint AS likes,
        greatest(0, (SELECT coalesce(sum(value), 0) FROM counter_shards
                     WHERE entity_id = v.id AND kind = 'comments')
                    - {hidden_comments_sql("v.id", "p.partners")})::bigint AS comments
    FROM unnest(CAST(:posts AS uuid[]), CAST(:viewers AS uuid[])) WITH ORDINALITY
        AS r(post, viewer, i)
    CROSS JOIN LATERAL ({visible_post_sql("r.post", "r.viewer", published=True)}) v
    CROSS JOIN LATERAL (SELECT {_PARTNERS} AS partners) p
    """
)


@dataclass(frozen=True, slots=True)
class EngagementSnapshot:
    """A post the viewer may see and its exact like and comment counts."""

    post: PostRecord
    likes: int
    comments: int


async def engagement_snapshots(
    conn: AsyncConnection, pairs: list[Pair]
) -> list[EngagementSnapshot | None]:
    """Per (post, viewer) pair in order: the post and counts as seen, or None; one statement."""
    if not pairs:
        return []
    rows = await conn.execute(
        _SNAPSHOTS, {"posts": [p for p, _ in pairs], "viewers": [v for _, v in pairs]}
    )
    out: list[EngagementSnapshot | None] = [None] * len(pairs)
    for i, *post, likes, comments in rows:
        out[i - 1] = EngagementSnapshot(PostRecord(*post), int(likes), int(comments))
    return out


class EngagementReads:
    """Answers ``snapshot(post, viewer)`` with one statement per loop turn; no cache."""

    def __init__(self, engine: AsyncEngine, *, max_batch: int = 500) -> None:
        self.engine = engine
        self.max_batch = max_batch
        self._pending: list[tuple[Pair, asyncio.Future[EngagementSnapshot | None]]] = []
        self._flushing: set[asyncio.Task[None]] = set()

    async def snapshot(self, post_id: uuid.UUID, viewer_id: uuid.UUID) -> EngagementSnapshot | None:
        """The post and counts if visible to ``viewer_id``, else None; raises DBAPIError."""
        fut: asyncio.Future[EngagementSnapshot | None] = asyncio.get_running_loop().create_future()
        self._pending.append(((post_id, viewer_id), fut))
        if len(self._pending) == 1:
            asyncio.get_running_loop().call_soon(self._flush)
        elif len(self._pending) >= self.max_batch:
            self._flush()
        return await fut

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        if batch:
            task = asyncio.create_task(self._answer(batch))
            self._flushing.add(task)
            task.add_done_callback(self._flushing.discard)

    async def _answer(
        self, batch: list[tuple[Pair, asyncio.Future[EngagementSnapshot | None]]]
    ) -> None:
        try:
            async with self.engine.connect() as conn:
                conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
                found = await engagement_snapshots(conn, [pair for pair, _ in batch])
        except asyncio.CancelledError:
            for _, fut in batch:
                fut.cancel()
            raise
        except Exception as exc:
            for _, fut in batch:
                if not fut.done():
                    fut.set_exception(exc)
            return
        for (_, fut), snap in zip(batch, found, strict=True):
            if not fut.done():
                fut.set_result(snap)
