"""Publishing real-time events to Redis pub/sub (any process: the API or the worker)."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Sequence

from redis.asyncio import Redis

from domain.realtime.channels import (
    ENGAGEMENT,
    FEED_ITEM,
    NOTIFICATION,
    ONLINE_KEY,
    encode_event,
    post_channel,
    user_channel,
)

# KEYS: the presence set; ARGV: now (epoch ms), the event, channel prefix and suffix,
# then user ids. PUBLISHes the event on the channel of each user whose presence holds
# past now; returns how many were published. One round trip for a page of users.
_PUBLISH_TO_ONLINE = """
local now = tonumber(ARGV[1])
local scores = redis.call('ZMSCORE', KEYS[1], unpack(ARGV, 5))
local n = 0
for i = 1, #scores do
  local s = scores[i]
  if s and tonumber(s) > now then
    redis.call('PUBLISH', ARGV[3] .. ARGV[i + 4] .. ARGV[4], ARGV[2])
    n = n + 1
  end
end
return n
"""

#: Users per script call (Lua's unpack is bounded; a fan-out page is cut into these).
PUBLISH_CHUNK = 1_000

_PREFIX, _SUFFIX = user_channel("\0").split("\0")


def now_ms() -> int:
    """Epoch milliseconds: the clock of presence scores."""
    return int(time.time() * 1000)


class RealtimePublisher:
    """Publishes id-only events; subscribers re-read and re-check what they point to.

    Publishing is best effort (Redis pub/sub keeps nothing for absent subscribers);
    every method raises ``redis.exceptions.RedisError`` when Redis fails, and callers
    that must not fail on it (use cases after their commit) catch it.
    """

    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self._to_online = redis.register_script(_PUBLISH_TO_ONLINE)

    async def feed_item(
        self, post_id: uuid.UUID, author_id: uuid.UUID, recipients: Sequence[uuid.UUID]
    ) -> int:
        """Tell the ``recipients`` with an open feed subscription (presence in
        ``rt:online``) that ``post_id`` entered their feed; return how many were told.
        One script call per PUBLISH_CHUNK recipients."""
        event = encode_event(FEED_ITEM, post_id=post_id, author_id=author_id)
        sent = 0
        for i in range(0, len(recipients), PUBLISH_CHUNK):
            chunk = recipients[i : i + PUBLISH_CHUNK]
            sent += await self._to_online(
                keys=[ONLINE_KEY],
                args=[now_ms(), event, _PREFIX, _SUFFIX, *(str(u) for u in chunk)],
            )
        return sent

    async def notification_created(
        self, recipient_id: uuid.UUID, notification_id: uuid.UUID
    ) -> None:
        """Tell ``recipient_id``'s subscriptions that a notification was created (the
        ``NotificationPublisher`` of domain.notifications)."""
        await self.redis.publish(
            user_channel(recipient_id), encode_event(NOTIFICATION, notification_id=notification_id)
        )

    async def engagement_changed(self, post_id: uuid.UUID) -> None:
        """Tell subscribers of ``post_id`` that its likes or comments changed (they read
        the counts themselves, so an event that arrives late never shows old counts)."""
        await self.redis.publish(post_channel(post_id), encode_event(ENGAGEMENT, post_id=post_id))

    async def online_count(self) -> int:
        """How many users have an open feed subscription now (ZCOUNT, O(log n))."""
        return await self.redis.zcount(ONLINE_KEY, f"({now_ms()}", "+inf")

    async def online_users(self, *, batch: int = 5_000) -> AsyncIterator[list[uuid.UUID]]:
        """Yield the users with an open feed subscription, about ``batch`` at a time
        (ZSCAN: never blocks Redis; a user may come twice, callers deduplicate)."""
        now = now_ms()
        cursor = 0
        while True:
            cursor, items = await self.redis.zscan(ONLINE_KEY, cursor, count=batch)
            users = []
            for member, score in items:
                if score > now:
                    try:
                        users.append(
                            uuid.UUID(member.decode() if isinstance(member, bytes) else member)
                        )
                    except ValueError:
                        continue
            if users:
                yield users
            if cursor == 0:
                return
