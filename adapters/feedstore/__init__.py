"""The feed store: the Redis (standalone or Cluster) that holds timelines, author
stores, presence and real-time pub/sub (docs/operations/scaling.md "Scaling out").

``domain.feed`` and ``domain.realtime`` speak to a :class:`FeedRedis`; everything else
that uses Redis (the arq queue, rate limits, idempotency, persisted queries) stays on
``REDIS_URL``, a standalone Redis, since arq does not support Redis Cluster.
"""

from __future__ import annotations

from collections.abc import Sequence

from redis.asyncio import Redis

from adapters.feedstore.cluster import ClusterFeedRedis
from adapters.feedstore.resp import Call, Script, encode
from adapters.feedstore.store import FeedRedis, as_feed_redis, run_stamp

__all__ = [
    "Call",
    "ClusterFeedRedis",
    "FeedRedis",
    "Script",
    "as_feed_redis",
    "encode",
    "open_feed_redis",
    "run_stamp",
]


def open_feed_redis(
    redis_url: str, *, cluster_url: str | None = None, cluster_nodes: Sequence[str] = ()
) -> FeedRedis:
    """The feed store: the Redis Cluster that ``cluster_url`` (one node's URL) or
    ``cluster_nodes`` (``host:port`` seeds) name, else the standalone Redis at
    ``redis_url``. Binary replies; connects on first use."""
    if cluster_url or cluster_nodes:
        return ClusterFeedRedis.connect(url=cluster_url, nodes=cluster_nodes)
    return FeedRedis(Redis.from_url(redis_url))
