"""The feed store (docs/operations/scaling.md "Scaling out"); all other Redis use stays
on the standalone ``REDIS_URL`` (arq has no Redis Cluster support)."""

from __future__ import annotations

from collections.abc import Sequence

from redis.asyncio import Redis

from adapters.feedstore.cluster import ClusterFeedRedis
from adapters.feedstore.store import FeedRedis, as_feed_redis, run_stamp
from adapters.resp import Call, Script, encode

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
    """The cluster of ``cluster_url`` / ``cluster_nodes``, else ``redis_url``'s Redis."""
    if cluster_url or cluster_nodes:
        return ClusterFeedRedis.connect(url=cluster_url, nodes=cluster_nodes)
    return FeedRedis(Redis.from_url(redis_url))
