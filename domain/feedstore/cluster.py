"""The feed store on a Redis Cluster (redis-py's async ``RedisCluster``).

``RedisCluster`` knows the cluster: it discovers the nodes and the slot map (CLUSTER
SLOTS), follows redirections for single commands, and serves the rare single-key
commands. Batches go through a plain connection pool per master, taken from that map,
so that one round trip per node carries a whole page (redis-py's cluster pipeline
refuses EVALSHA and packs each argument in Python). On a node failure only its
calls fail; the map is re-read (at most once a second) in case the cluster failed the
node over, and on ``MOVED`` at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Sequence

from redis.asyncio import ConnectionPool, Redis, RedisCluster
from redis.asyncio.cluster import ClusterNode, ClusterParser
from redis.crc import key_slot
from redis.exceptions import AskError, ConnectionError, RedisClusterException, RedisError

from domain.feedstore.store import FeedRedis

#: Seconds between two re-reads of the slot map after a node failed.
REFRESH_EVERY_S = 1.0
#: Connection settings a node's pool takes over from the cluster client.
_POOL_KWARGS = (
    "username",
    "password",
    "credential_provider",
    "client_name",
    "socket_connect_timeout",
    "socket_keepalive",
    "socket_keepalive_options",
    "socket_timeout",
)


class ClusterFeedRedis(FeedRedis):
    """The feed store on a Redis Cluster: one script call per hash slot, one round trip
    per master per batch."""

    is_cluster = True

    def __init__(self, client: RedisCluster, *, sharded_pubsub: bool | None = None) -> None:
        super().__init__(client)  # type: ignore[arg-type]
        self._pools: dict[str, Redis] = {}
        self._lock: asyncio.Lock | None = None
        self._refreshed_at = 0.0
        self._stale = False
        self._sharded = sharded_pubsub  # None: decided by the servers' version

    @classmethod
    def connect(
        cls,
        *,
        url: str | None = None,
        nodes: Sequence[str] = (),
        sharded_pubsub: bool | None = None,
    ) -> ClusterFeedRedis:
        """A client for the cluster that ``url`` (one node's ``redis://`` URL) or
        ``nodes`` (``host:port`` seeds) name; it connects on first use. Missing slots
        are no error: with ``cluster-require-full-coverage no`` the live masters keep
        serving while one is down. ``sharded_pubsub=False`` keeps PUBLISH/SUBSCRIBE on
        a Redis 7 cluster (None: sharded where the servers offer it)."""
        common = {"require_full_coverage": False, "socket_connect_timeout": 2.0}
        if url:
            return cls(RedisCluster.from_url(url, **common), sharded_pubsub=sharded_pubsub)
        seeds = [ClusterNode(*_host_port(n)) for n in nodes]
        if not seeds:
            raise ValueError("a Redis Cluster needs a URL or at least one host:port")
        return cls(RedisCluster(startup_nodes=seeds, **common), sharded_pubsub=sharded_pubsub)

    # -- routing -----------------------------------------------------------------------

    def slot_groups(self, keys: Sequence[str], stride: int = 1) -> list[list[int]]:
        """One group per hash slot (usually one owner each: every user has a slot)."""
        groups: dict[int, list[int]] = {}
        for i in range(len(keys) // stride):
            groups.setdefault(key_slot(keys[i * stride].encode()), []).append(i)
        return list(groups.values())

    def _node_of(self, route: str | None) -> Hashable:
        manager = self.client.nodes_manager
        if route is None:
            node = manager.default_node or next(iter(manager.nodes_cache.values()), None)
        else:
            owners = manager.slots_cache.get(key_slot(route.encode()))
            node = owners[0] if owners else None
        if node is None:
            raise ConnectionError(f"no Redis Cluster node serves {route!r}")
        return node.name

    def _client_of(self, node: Hashable) -> Redis:
        name = str(node)
        pool = self._pools.get(name)
        if pool is None:
            host, port = _host_port(name)
            kwargs = self.client.get_connection_kwargs()
            extra = {k: kwargs[k] for k in _POOL_KWARGS if kwargs.get(k) is not None}
            extra.update({k: v for k, v in kwargs.items() if k.startswith("ssl")})
            pool = Redis(
                connection_pool=ConnectionPool(
                    connection_class=kwargs["connection_class"],
                    parser_class=ClusterParser,  # MOVED, ASK, TRYAGAIN as typed errors
                    host=host,
                    port=port,
                    **extra,
                )
            )
            self._pools[name] = pool
        return pool

    def _all_nodes(self) -> list[Hashable]:
        return [n.name for n in self.client.get_primaries()]

    def _ask_node(self, error: AskError) -> Hashable:
        return f"{error.host}:{error.port}"

    # -- the slot map ------------------------------------------------------------------

    async def _ready(self) -> None:
        if self._stale:
            await self._refresh(force=False)
        try:
            await self.client.initialize()
        except RedisClusterException as exc:  # not a RedisError: callers catch those
            raise ConnectionError(f"Redis Cluster unreachable: {exc}") from exc

    async def _moved(self) -> None:
        await self._refresh(force=True)

    def _node_failed(self, node: Hashable) -> None:
        self._stale = True

    async def _refresh(self, *, force: bool) -> None:
        """Re-read the slot map (CLUSTER SLOTS), at most once a second unless forced."""
        loop = asyncio.get_running_loop()
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            if not force and loop.time() - self._refreshed_at < REFRESH_EVERY_S:
                return
            self._stale = False
            self._refreshed_at = loop.time()
            try:
                await self.client.nodes_manager.initialize()
            except (RedisError, RedisClusterException, OSError):
                self._stale = True  # keep the old map; try again later

    async def sharded_pubsub(self) -> bool:
        """Sharded pub/sub where the cluster's servers offer it (Redis >= 7)."""
        if self._sharded is None:
            await self._ready()
            self._sharded = await self._server_version() >= (7, 0)
        return self._sharded

    def pubsub_pool(self, node: Hashable) -> Redis:
        """The connection pool of one master (a pub/sub connection comes from it)."""
        return self._client_of(node)

    def node_of(self, route: str | None) -> str:
        """The ``host:port`` of the master that owns ``route``'s slot (any master for
        None). Raises ConnectionError if no master serves it."""
        return str(self._node_of(route))

    async def refresh(self) -> None:
        """Re-read the slot map now (after a node's pub/sub connection failed)."""
        await self._refresh(force=False)

    async def aclose(self) -> None:
        for pool in self._pools.values():
            await pool.aclose()
        self._pools.clear()
        await self.client.aclose()


def _host_port(node: str) -> tuple[str, int]:
    host, _, port = node.strip().rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"not host:port: {node!r}")
    return host, int(port)
