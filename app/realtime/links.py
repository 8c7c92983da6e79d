"""The hub's connections to Redis pub/sub: :class:`PlainLink`, one SUBSCRIBE connection
(standalone Redis, or a cluster without sharded pub/sub), and :class:`ShardedLink`, one
SSUBSCRIBE connection per master owning the channels' slots (Redis 7 cluster).

Both hand the hub ``{"type": "message" | "subscribe" | "unsubscribe", "channel",
"data"}``, never the confirmations of their own re-subscriptions; a lost connection is
retried with backoff and resubscribed (events published meanwhile are lost)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from redis.asyncio.client import PubSub

from adapters.feedstore import ClusterFeedRedis, FeedRedis

log = logging.getLogger("roost.realtime")

_TYPES = {
    "message": "message",
    "smessage": "message",
    "subscribe": "subscribe",
    "ssubscribe": "subscribe",
    "unsubscribe": "unsubscribe",
    "sunsubscribe": "unsubscribe",
}


class _PubSub(PubSub):
    """redis-py's PubSub, which also re-sends SSUBSCRIBE for its shard channels after a
    reconnect (redis-py 5's asyncio PubSub knows only SUBSCRIBE), and keeps quiet the
    confirmations of channels that were confirmed before (re-subscriptions)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.shard_channels: set[str] = set()
        self.confirmed: set[str] = set()  # channels whose subscription was confirmed
        self.quiet: set[str] = set()  # ... and re-sent since: their next confirmation

    async def on_connect(self, connection: Any) -> None:
        plain = {self.encoder.decode(c, force=True) for c in self.channels}
        self.quiet.update(plain & self.confirmed)
        await super().on_connect(connection)
        await self.resubscribe_shards()

    async def resubscribe_shards(self) -> None:
        """SSUBSCRIBE every shard channel again (on a new connection)."""
        if self.shard_channels:
            self.quiet.update(self.shard_channels & self.confirmed)
            await self.execute_command("SSUBSCRIBE", *self.shard_channels)

    def translate(self, msg: dict[str, Any] | None) -> dict[str, Any] | None:
        """The message in the hub's terms, or None for one the hub must not see."""
        if msg is None:
            return None
        kind = _TYPES.get(msg["type"])
        if kind is None:
            return None
        channel = msg["channel"]
        if isinstance(channel, bytes):
            channel = channel.decode()
        if kind == "subscribe":
            if channel in self.quiet:
                self.quiet.discard(channel)
                return None
            self.confirmed.add(channel)
        elif kind == "unsubscribe":
            self.confirmed.discard(channel)
            self.quiet.discard(channel)
        return {"type": kind, "channel": channel, "data": msg["data"]}


async def _read_one(
    pubsub: _PubSub, delay: list[float], on_error: Callable[[], Awaitable[None]]
) -> dict[str, Any] | None:
    """Read one message; on a failure log it, let ``on_error`` react, back off."""
    try:
        msg = await pubsub.get_message(timeout=None)
        delay[0] = 0.1
        return pubsub.translate(msg)
    except asyncio.CancelledError:
        raise
    except Exception:
        # redis-py reconnects on the next read and subscribes the channels again.
        log.warning("realtime: pub/sub read failed; reconnecting", exc_info=True)
        await on_error()
        await asyncio.sleep(delay[0])
        delay[0] = min(delay[0] * 2, 5.0)
        return None


class PlainLink:
    """One pub/sub connection with SUBSCRIBE (standalone Redis, or any master of a
    cluster without sharded pub/sub)."""

    def __init__(self, store: FeedRedis) -> None:
        self.store = store
        self._pubsub: _PubSub | None = None
        self._node: str | None = None
        self._delay = [0.1]

    def _open(self) -> _PubSub:
        if isinstance(self.store, ClusterFeedRedis):
            self._node = self._node or self.store.node_of(None)
            pool = self.store.pubsub_pool(self._node).connection_pool
        else:
            pool = self.store.client.connection_pool
        return _PubSub(pool)

    async def connect(self) -> None:
        """Open the connection (raises RedisError if Redis does not answer)."""
        pubsub = self._open()
        try:
            await pubsub.connect()
        except BaseException:
            with contextlib.suppress(Exception):
                await pubsub.aclose()
            raise
        self._pubsub = pubsub

    async def subscribe(self, channels: Sequence[str]) -> None:
        assert self._pubsub is not None
        await self._pubsub.subscribe(*channels)

    async def unsubscribe(self, channels: Sequence[str]) -> None:
        assert self._pubsub is not None
        await self._pubsub.unsubscribe(*channels)

    async def get_message(self) -> dict[str, Any] | None:
        """The next message (None: nothing for the hub; call again)."""
        assert self._pubsub is not None
        return await _read_one(self._pubsub, self._delay, self._relocate)

    async def _relocate(self) -> None:
        """On a cluster, move to another master if this one is gone for good (its
        channels are subscribed there, quietly)."""
        if not isinstance(self.store, ClusterFeedRedis) or self._pubsub is None:
            return
        await self.store.refresh()
        for name in self._candidates():
            if name == self._node:
                return  # still a master: redis-py reconnects to it
            old, channels = self._pubsub, [c.decode() for c in self._pubsub.channels]
            pubsub = _PubSub(self.store.pubsub_pool(name).connection_pool)
            pubsub.confirmed = set(channels) & old.confirmed
            pubsub.quiet = set(pubsub.confirmed)
            try:
                await pubsub.connect()
                if channels:
                    await pubsub.subscribe(*channels)
            except Exception:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
                continue
            self._pubsub, self._node = pubsub, name
            with contextlib.suppress(Exception):
                await old.aclose()
            log.warning("realtime: pub/sub moved to cluster node %s", name)
            return

    def _candidates(self) -> list[str]:
        assert isinstance(self.store, ClusterFeedRedis)
        return [n.name for n in self.store.cluster.get_primaries()]

    async def aclose(self) -> None:
        if self._pubsub is not None:
            with contextlib.suppress(Exception):
                await self._pubsub.aclose()
            self._pubsub = None


class ShardedLink:
    """SSUBSCRIBE on the master of each channel's slot, one connection per master."""

    def __init__(self, store: ClusterFeedRedis) -> None:
        self.store = store
        self._nodes: dict[str, _PubSub] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._owner: dict[str, str] = {}  # channel -> master it is subscribed on
        self._locks: dict[str, asyncio.Lock] = {}
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._rehoming: asyncio.Lock | None = None

    async def connect(self) -> None:
        """Learn the slot map (raises RedisError if no master answers)."""
        await self.store.ready()

    def _pubsub(self, node: str) -> _PubSub:
        pubsub = self._nodes.get(node)
        if pubsub is None:
            pubsub = self._nodes[node] = _PubSub(self.store.pubsub_pool(node).connection_pool)
            self._locks[node] = asyncio.Lock()
        return pubsub

    async def _ssubscribe(self, node: str, chunk: list[str], *, quiet: bool) -> None:
        """SSUBSCRIBE ``chunk`` on ``node`` (``quiet``: confirmations not for the hub); on
        failure the node's reader re-sends them once it reconnects."""
        pubsub = self._pubsub(node)
        pubsub.shard_channels.update(chunk)
        self._owner.update(dict.fromkeys(chunk, node))
        if quiet:
            pubsub.confirmed.update(chunk)
            pubsub.quiet.update(chunk)
        try:
            async with self._locks[node]:  # one connect per node, never two at once
                await pubsub.execute_command("SSUBSCRIBE", *chunk)
        except Exception:  # the reader re-sends every shard channel once it reconnects
            log.warning("realtime: SSUBSCRIBE on %s failed; retrying", node, exc_info=True)
        if node not in self._tasks:
            self._tasks[node] = asyncio.create_task(self._pump(node), name=f"realtime-{node}")

    async def subscribe(self, channels: Sequence[str]) -> None:
        by_node: dict[str, list[str]] = {}
        for channel in channels:
            by_node.setdefault(self.store.node_of(channel), []).append(channel)
        for node, chunk in by_node.items():
            await self._ssubscribe(node, chunk, quiet=False)

    async def unsubscribe(self, channels: Sequence[str]) -> None:
        by_node: dict[str, list[str]] = {}
        for channel in channels:
            node = self._owner.pop(channel, None)
            if node is not None:
                by_node.setdefault(node, []).append(channel)
        for node, chunk in by_node.items():
            pubsub = self._nodes[node]
            pubsub.shard_channels.difference_update(chunk)
            try:
                await pubsub.execute_command("SUNSUBSCRIBE", *chunk)
            except Exception:  # a reconnect will not subscribe them again
                log.warning("realtime: SUNSUBSCRIBE on %s failed", node, exc_info=True)

    async def get_message(self) -> dict[str, Any] | None:
        return await self._queue.get()

    async def _pump(self, node: str) -> None:
        """Read one master's connection into the queue."""
        pubsub = self._nodes[node]
        delay = [0.1]

        async def failed() -> None:
            await self.store.refresh()
            await self._rehome()

        while True:
            if pubsub.connection is None:  # the first SSUBSCRIBE could not connect
                try:
                    async with self._locks[node]:
                        if pubsub.connection is None:
                            await pubsub.connect()
                            await pubsub.resubscribe_shards()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.warning("realtime: cannot reach %s; retrying", node, exc_info=True)
                    await failed()
                    await asyncio.sleep(delay[0])
                    delay[0] = min(delay[0] * 2, 5.0)
                    continue
            msg = await _read_one(pubsub, delay, failed)
            if msg is None:
                continue
            channel = msg["channel"]
            if msg["type"] == "unsubscribe" and channel in pubsub.shard_channels:
                # Not asked for: the slot moved away (Redis 7 tells its subscribers).
                pubsub.shard_channels.discard(channel)
                await self.store.refresh()
                with contextlib.suppress(Exception):
                    await self._ssubscribe(self.store.node_of(channel), [channel], quiet=True)
                continue
            self._queue.put_nowait(msg)

    async def _rehome(self) -> None:
        """Subscribe each channel on the master that owns its slot now, if that moved."""
        self._rehoming = self._rehoming or asyncio.Lock()
        async with self._rehoming:
            moves: dict[str, list[str]] = {}
            for channel, node in list(self._owner.items()):
                try:
                    now = self.store.node_of(channel)
                except Exception:
                    continue
                if now != node:
                    moves.setdefault(now, []).append(channel)
                    self._nodes[node].shard_channels.discard(channel)
            for node, chunk in moves.items():
                await self._ssubscribe(node, chunk, quiet=True)
                log.warning("realtime: %d channels moved to %s", len(chunk), node)

    async def aclose(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        for pubsub in self._nodes.values():
            with contextlib.suppress(Exception):
                await pubsub.aclose()
        self._tasks.clear()
        self._nodes.clear()


async def open_link(store: FeedRedis) -> PlainLink | ShardedLink:
    """The right link for ``store``, connected."""
    if isinstance(store, ClusterFeedRedis) and await store.sharded_pubsub():
        link: PlainLink | ShardedLink = ShardedLink(store)
    else:
        link = PlainLink(store)
    await link.connect()
    return link
