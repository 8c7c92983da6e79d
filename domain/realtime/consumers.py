"""Outbox consumers that publish engagement changes (likes and comments) to subscribers."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from domain.outbox.process import Handler
from domain.realtime.publisher import RealtimePublisher

#: The topics whose events change a post's like or comment count.
ENGAGEMENT_TOPICS = ("like.created", "like.removed", "comment.created", "comment.deleted")
#: The one the API cannot publish itself (deleteComment does not know the post).
WORKER_ONLY_TOPICS = ("comment.deleted",)


def engagement_handlers(publisher: RealtimePublisher, *, api_publishes: bool) -> dict[str, Handler]:
    """``{topic: handler}`` publishing ``engagement`` on ``rt:post:{post_id}`` for the
    engagement topics (every payload has ``post_id``). With ``api_publishes`` the API
    already published likes and new comments right after their commit, so only
    WORKER_ONLY_TOPICS are handled here. A Redis failure raises: the job retries."""

    async def changed(payload: Mapping[str, Any]) -> None:
        await publisher.engagement_changed(uuid.UUID(payload["post_id"]))

    topics = WORKER_ONLY_TOPICS if api_publishes else ENGAGEMENT_TOPICS
    return dict.fromkeys(topics, changed)
