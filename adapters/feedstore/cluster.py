"""The feed store on a Redis Cluster. ``RedisCluster`` keeps the slot map and serves
single commands; batches use a plain pool per master (redis-py's cluster pipeline
refuses EVALSHA). A node failure fails only its calls and re-reads the map (at most
once a second; at once on ``MOVED``).
"""

from __future__ import annotations

import asyncio
from binascii import crc_hqx
from collections.abc import Hashable, Sequence
from typing import Any

from redis.asyncio import Connection, ConnectionPool, Redis, RedisCluster
from redis.asyncio.cluster import ClusterNode, ClusterParser
from redis.exceptions import (
    AskError,
    ConnectionError,
    RedisClusterException,
    RedisError,
    ResponseError,
)

from adapters.feedstore.store import FeedRedis
from adapters.resp import Script

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
    """One script call per hash slot, one round trip per master per batch."""

    is_cluster = True

    def __init__(self, client: RedisCluster, *, sharded_pubsub: bool | None = None) -> None:
        # FeedRedis uses only commands RedisCluster also has; cluster-only: self.cluster.
        super().__init__(client)  # type: ignore[arg-type]
        self.cluster = client
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
        """A lazy client for the cluster of ``url`` or ``nodes`` (``host:port``); missing
        slots are no error (live masters keep serving). ``sharded_pubsub`` None: where
        the servers offer it."""
        common = {"require_full_coverage": False, "socket_connect_timeout": 2.0}
        if url:
            return cls(RedisCluster.from_url(url, **common), sharded_pubsub=sharded_pubsub)
        seeds = [ClusterNode(*_host_port(n)) for n in nodes]
        if not seeds:
            raise ValueError("a Redis Cluster needs a URL or at least one host:port")
        return cls(RedisCluster(startup_nodes=seeds, **common), sharded_pubsub=sharded_pubsub)

    def slot_groups(
        self, keys: Sequence[str], stride: int = 1
    ) -> list[tuple[int | None, list[int]]]:
        """One group per hash slot."""
        groups: dict[int, list[int]] = {}
        for i in range(len(keys) // stride):
            groups.setdefault(slot_of(keys[i * stride]), []).append(i)
        return list(groups.items())

    async def eval_by_slot(
        self, script: Script, keys: Sequence[str], stride: int, args: Sequence[Any]
    ) -> list[tuple[list[int], Any]]:
        """The fan-out's hot path: one call per owner built in one pass, bypassing
        :meth:`execute`, except for calls that fail (NOSCRIPT, MOVED, ASK, a node)."""
        if stride != 1:
            return await super().eval_by_slot(script, keys, stride, args)
        await self._ready()
        head, tail = script.one_key_parts(args)
        slots = self.cluster.nodes_manager.slots_cache
        per_node: dict[str, tuple[list[bytes], list[int]]] = {}
        again: list[int] = []
        for i, key in enumerate(keys):
            owners = slots.get(slot_of(key))
            if not owners:
                again.append(i)
                continue
            batch = per_node.get(owners[0].name)
            if batch is None:
                batch = per_node[owners[0].name] = ([], [])
            k = key.encode()
            batch[0].append(b"%b$%d\r\n%b\r\n%b" % (head, len(k), k, tail))
            batch[1].append(i)
        sent = await asyncio.gather(
            *(self._round_trip(node, b"".join(b[0]), len(b[0])) for node, b in per_node.items()),
            return_exceptions=True,
        )
        out: list[tuple[list[int], Any]] = []
        for (node, (_, idxs)), replies in zip(per_node.items(), sent, strict=True):
            if isinstance(replies, BaseException):
                if not isinstance(replies, (RedisError, OSError)):
                    raise replies
                self._node_failed(node)
                again += idxs
                continue
            for i, reply in zip(idxs, replies, strict=True):
                if isinstance(reply, ResponseError):
                    again.append(i)
                else:
                    out.append(([i], reply))
        if again:
            rest = await super().eval_by_slot(script, [keys[i] for i in again], 1, args)
            out += [([again[j] for j in owners], r) for owners, r in rest]
        return out

    def _node_of(self, route: str | None, slot: int | None = None) -> Hashable:
        manager = self.cluster.nodes_manager
        if route is None:
            # default_node is None until the first slot map (typed as always set).
            default: ClusterNode | None = manager.default_node
            node = (
                default if default is not None else next(iter(manager.nodes_cache.values()), None)
            )
        else:
            if slot is None:
                slot = slot_of(route)
            owners = manager.slots_cache.get(slot)
            node = owners[0] if owners else None
        if node is None:
            raise ConnectionError(f"no Redis Cluster node serves {route!r}")
        return node.name

    def _client_of(self, node: Hashable) -> Redis:
        name = str(node)
        pool = self._pools.get(name)
        if pool is None:
            host, port = _host_port(name)
            kwargs = self.cluster.get_connection_kwargs()
            connection_class = kwargs["connection_class"] or Connection
            extra = {k: kwargs[k] for k in _POOL_KWARGS if kwargs.get(k) is not None}
            extra.update({k: v for k, v in kwargs.items() if k.startswith("ssl")})
            pool = Redis(
                connection_pool=ConnectionPool(
                    connection_class=connection_class,
                    parser_class=ClusterParser,  # MOVED, ASK, TRYAGAIN as typed errors
                    host=host,
                    port=port,
                    **extra,
                )
            )
            self._pools[name] = pool
        return pool

    def _all_nodes(self) -> list[Hashable]:
        return [n.name for n in self.cluster.get_primaries()]

    def _ask_node(self, error: AskError) -> Hashable:
        return f"{error.host}:{error.port}"

    async def _ready(self) -> None:
        if self._stale:
            await self._refresh(force=False)
        try:
            await self.cluster.initialize()
        except RedisClusterException as exc:  # not a RedisError: callers catch those
            raise ConnectionError(f"Redis Cluster unreachable: {exc}") from exc

    async def _moved(self) -> None:
        await self._refresh(force=True)

    def _node_failed(self, node: Hashable) -> None:
        self._stale = True

    async def _refresh(self, *, force: bool) -> None:
        """Re-read the slot map, at most once a second unless forced."""
        loop = asyncio.get_running_loop()
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            if not force and loop.time() - self._refreshed_at < REFRESH_EVERY_S:
                return
            self._stale = False
            self._refreshed_at = loop.time()
            try:
                await self.cluster.nodes_manager.initialize()
            except (RedisError, RedisClusterException, OSError):
                self._stale = True  # keep the old map; try again later

    async def sharded_pubsub(self) -> bool:
        """Sharded pub/sub where the cluster's servers offer it (Redis >= 7)."""
        if self._sharded is None:
            await self._ready()
            self._sharded = await self._server_version() >= (7, 0)
        return self._sharded

    def pubsub_pool(self, node: Hashable) -> Redis:
        """The connection pool of one master."""
        return self._client_of(node)

    def node_of(self, route: str | None) -> str:
        """The master owning ``route``'s slot (None: any); ConnectionError if none."""
        return str(self._node_of(route))

    async def refresh(self) -> None:
        """Re-read the slot map now (after a node's pub/sub connection failed)."""
        await self._refresh(force=False)

    async def aclose(self) -> None:
        for pool in self._pools.values():
            await pool.aclose()
        self._pools.clear()
        await self.client.aclose()


def slot_of(key: str) -> int:
    """The Redis Cluster hash slot of ``key`` (CRC16 of its ``{tag}``)."""
    start = key.find("{")
    if start >= 0:
        end = key.find("}", start + 1)
        if end > start + 1:
            key = key[start + 1 : end]
    return crc_hqx(key.encode(), 0) & 0x3FFF


def _host_port(node: str) -> tuple[str, int]:
    host, _, port = node.strip().rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"not host:port: {node!r}")
    return host, int(port)
