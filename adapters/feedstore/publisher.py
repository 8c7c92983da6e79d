""":class:`domain.realtime.ports.RealtimePublisher` on the feed store's pub/sub."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence

from redis.asyncio import Redis
from redis.exceptions import RedisError

from adapters.feedstore.store import FeedRedis, as_feed_redis
from adapters.redis_errors import store_error, translated
from adapters.resp import Call
from domain.realtime.channels import (
    ENGAGEMENT,
    FEED_ITEM,
    NOTIFICATION,
    ONLINE_KEY,
    encode_event,
    now_ms,
    post_channel,
    user_channel,
)

#: Users per presence lookup (ZMSCORE); a fan-out page is cut into these.
PUBLISH_CHUNK = 1_000


class RedisPublisher:
    """Publishes id-only events, best effort (SPUBLISH where sharded); methods raise
    :class:`~domain.errors.StoreError` when Redis fails."""

    def __init__(self, redis: Redis | FeedRedis) -> None:
        self.store = as_feed_redis(redis)
        self.redis = self.store.client
        self._verb: str | None = None

    async def _publish(self, messages: Sequence[tuple[str, bytes]]) -> None:
        """Publish each ``(channel, data)``: one round trip per node."""
        if self._verb is None:
            self._verb = "SPUBLISH" if await self.store.sharded_pubsub() else "PUBLISH"
        await self.store.execute([Call.of(c, self._verb, c, data) for c, data in messages])

    @translated
    async def feed_item(
        self, post_id: uuid.UUID, author_id: uuid.UUID, recipients: Sequence[uuid.UUID]
    ) -> int:
        """Tell the online ``recipients`` that ``post_id`` entered their feed; return
        how many were told."""
        event = encode_event(FEED_ITEM, post_id=post_id, author_id=author_id)
        now = now_ms()
        calls = [
            Call.of(ONLINE_KEY, "ZMSCORE", ONLINE_KEY, *(str(u) for u in chunk))
            for chunk in _chunks(recipients, PUBLISH_CHUNK)
        ]
        online: list[uuid.UUID] = []
        for chunk, scores in zip(
            _chunks(recipients, PUBLISH_CHUNK), await self.store.execute(calls), strict=True
        ):
            online += [u for u, s in zip(chunk, scores, strict=True) if s and float(s) > now]
        if online:
            await self._publish([(user_channel(u), event) for u in online])
        return len(online)

    @translated
    async def notification_created(
        self, recipient_id: uuid.UUID, notification_id: uuid.UUID
    ) -> None:
        """Tell ``recipient_id``'s subscriptions that a notification was created."""
        await self._publish(
            [
                (
                    user_channel(recipient_id),
                    encode_event(NOTIFICATION, notification_id=notification_id),
                )
            ]
        )

    @translated
    async def engagement_changed(self, post_id: uuid.UUID) -> None:
        """Tell subscribers of ``post_id`` that its counts changed (they re-read them)."""
        await self._publish([(post_channel(post_id), encode_event(ENGAGEMENT, post_id=post_id))])

    @translated
    async def online_count(self) -> int:
        """How many users have an open feed subscription now."""
        (n,) = await self.store.execute(
            [Call.of(ONLINE_KEY, "ZCOUNT", ONLINE_KEY, f"({now_ms()}", "+inf")]
        )
        return int(n)

    async def online_users(self, *, batch: int = 5_000) -> AsyncIterator[list[uuid.UUID]]:
        """Yield online users about ``batch`` at a time (ZSCAN: may repeat a user)."""
        now = now_ms()
        cursor = b"0"
        while True:
            try:
                ((cursor, items),) = await self.store.execute(
                    [Call.of(ONLINE_KEY, "ZSCAN", ONLINE_KEY, cursor, "COUNT", batch)]
                )
            except RedisError as exc:
                raise store_error(exc) from exc
            users = []
            for member, score in zip(items[0::2], items[1::2], strict=True):
                if float(score) > now:
                    try:
                        users.append(uuid.UUID(member.decode()))
                    except ValueError:
                        continue
            if users:
                yield users
            if cursor in (b"0", 0):
                return


def _chunks(items: Sequence[uuid.UUID], size: int) -> list[Sequence[uuid.UUID]]:
    return [items[i : i + size] for i in range(0, len(items), size)]
