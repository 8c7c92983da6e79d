"""The real-time outbox consumer: engagement changes to subscribers."""

from __future__ import annotations

import uuid

from domain.outbox.events import (
    CommentCreated,
    CommentDeleted,
    LikeCreated,
    LikeRemoved,
    PostEdited,
)
from domain.outbox.process import Consumer
from domain.realtime.ports import RealtimePublisher


def realtime_consumer(publisher: RealtimePublisher) -> Consumer:
    """The ``realtime`` consumer: ``engagement`` on ``rt:post:{post_id}``; a Redis failure
    raises."""

    async def changed(
        event: LikeCreated | LikeRemoved | CommentCreated | CommentDeleted | PostEdited,
        _: uuid.UUID,
    ) -> None:
        await publisher.engagement_changed(event.post_id)

    return dict.fromkeys(
        (LikeCreated, LikeRemoved, CommentCreated, CommentDeleted, PostEdited), changed
    )
