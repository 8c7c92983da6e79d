"""The feed store port: where timelines, presence and real-time pub/sub live.

:class:`FeedRedis` is what ``domain.feed`` and ``domain.realtime`` talk to. It sends
batches of commands (:class:`~domain.feedstore.resp.Call`) grouped by the node that
owns their keys, one pipelined round trip per node, all nodes at once, and takes care
of what a batch meets on the way: ``NOSCRIPT`` (the script is loaded on that node and
the calls sent again), and on a cluster ``MOVED`` (the slot map is refreshed),
``ASK`` (sent again to the importing node after ``ASKING``) and ``TRYAGAIN``.

Two implementations, which differ only where a standalone Redis and a Redis Cluster
must: how keys group into one script call (:meth:`FeedRedis.slot_groups`: all of a
page on one Redis; one hash slot each on a cluster) and which node a call goes to.
The cluster one is in :mod:`domain.feedstore.cluster`.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import (
    AskError,
    ConnectionError,
    MovedError,
    NoScriptError,
    RedisError,
    ResponseError,
    TryAgainError,
)

from domain.feedstore.resp import Call

#: Rounds of re-sending per batch (NOSCRIPT, MOVED, ASK, TRYAGAIN), after the first.
RETRY_ROUNDS = 3
_PENDING = object()
_ASKING = b"*1\r\n$6\r\nASKING\r\n"


class FeedRedis:
    """A Redis (or Redis Cluster) holding the feed store; standalone by default.

    ``client`` is the redis-py client (``Redis`` or ``RedisCluster``), for single
    commands where nothing is batched; binary replies (no decoding).
    """

    is_cluster = False

    def __init__(self, client: Redis) -> None:
        self.client = client
        self._version: tuple[int, ...] | None = None

    # -- what differs between a standalone Redis and a cluster -------------------------

    def slot_groups(self, keys: Sequence[str], stride: int = 1) -> list[list[int]]:
        """Split owners into the groups one script call may take: owner ``i`` has keys
        ``keys[i*stride:(i+1)*stride]`` (one hash slot). Returns lists of owner
        indexes; here a single group, since a standalone Redis has no slots."""
        return [list(range(len(keys) // stride))] if keys else []

    def _node_of(self, route: str | None) -> Hashable:
        return None

    def _client_of(self, node: Hashable) -> Redis:
        return self.client

    async def ready(self) -> None:
        """Connect enough to route: a cluster reads its slot map (raises RedisError if
        no node answers); a standalone Redis does nothing."""
        await self._ready()

    async def _ready(self) -> None:
        """Make sure the node map is known (a cluster discovers its slots)."""

    async def _moved(self) -> None:
        """Some slots moved: learn the new map."""

    def _node_failed(self, node: Hashable) -> None:
        """A node did not answer: a cluster may have failed it over."""

    def _ask_node(self, error: AskError) -> Hashable:
        raise error

    async def _server_version(self) -> tuple[int, ...]:
        info = await self._client_of(self._node_of(None)).info("server")
        return tuple(int(x) for x in str(info["redis_version"]).split(".")[:2])

    async def sharded_pubsub(self) -> bool:
        """Whether real-time events use sharded pub/sub (SPUBLISH/SSUBSCRIBE): only on a
        cluster whose servers offer it (Redis >= 7)."""
        return False

    # -- batches -----------------------------------------------------------------------

    async def execute(self, calls: Sequence[Call], *, raise_on_error: bool = True) -> list[Any]:
        """Send ``calls``, one pipelined round trip per node (all nodes concurrently),
        and return their replies in order.

        Replies are raw (bytes, ints, lists; no redis-py response callbacks). A node that
        fails (connection refused, reset) fails its calls with ``ConnectionError``; the
        other nodes' calls complete all the same. With ``raise_on_error`` the first
        failed call's exception is raised once every node answered, otherwise the
        exceptions take the place of their replies.
        """
        if not calls:
            return []
        await self._ready()
        results: list[Any] = [_PENDING] * len(calls)
        todo = list(range(len(calls)))
        asking: dict[int, Hashable] = {}
        for round_ in range(RETRY_ROUNDS + 1):
            groups: dict[tuple[Hashable, bool], list[int]] = defaultdict(list)
            for i in todo:
                if i in asking:
                    groups[(asking[i], True)].append(i)
                else:
                    groups[(self._node_for(calls[i], results, i), False)].append(i)
            groups.pop((_UNROUTED, False), None)
            await asyncio.gather(
                *(
                    self._send(node, ask, idxs, calls, results)
                    for (node, ask), idxs in groups.items()
                )
            )
            if round_ == RETRY_ROUNDS:
                break
            todo, asking = await self._retryable(calls, results, todo, groups)
            if not todo:
                break
            for i in todo:
                results[i] = _PENDING
        if raise_on_error:
            for r in results:
                if isinstance(r, Exception):
                    raise r
        return results

    def _node_for(self, call: Call, results: list[Any], i: int) -> Hashable:
        try:
            return self._node_of(call.route)
        except RedisError as exc:  # no node serves the slot (yet)
            results[i] = exc
            return _UNROUTED

    async def _send(
        self, node: Hashable, asking: bool, idxs: list[int], calls: Sequence[Call], results: list
    ) -> None:
        """One round trip: every call of ``idxs`` to ``node`` in one write, then their
        replies. A connection failure fails the calls it left without a reply."""
        pool = self._client_of(node).connection_pool
        try:
            conn = await pool.get_connection()
        except (RedisError, OSError) as exc:
            self._fail(node, idxs, results, exc)
            return
        try:
            if asking:
                data = b"".join(_ASKING + calls[i].data for i in idxs)
            else:
                data = b"".join(calls[i].data for i in idxs)
            await conn.send_packed_command(data, check_health=False)
            for i in idxs:
                if asking:
                    try:
                        await conn.read_response()
                    except ResponseError:
                        pass  # the command's own reply says what went wrong
                try:
                    results[i] = await conn.read_response()
                except ResponseError as exc:
                    results[i] = exc
        except (RedisError, OSError) as exc:
            await conn.disconnect(nowait=True)
            self._fail(node, idxs, results, exc)
        except BaseException:  # cancelled mid-batch: replies are left unread
            await conn.disconnect(nowait=True)
            raise
        finally:
            await pool.release(conn)

    def _fail(self, node: Hashable, idxs: list[int], results: list, exc: BaseException) -> None:
        if not isinstance(exc, RedisError):
            exc = ConnectionError(f"feed store node {node}: {exc}")
        for i in idxs:
            if results[i] is _PENDING:
                results[i] = exc
        self._node_failed(node)

    async def _retryable(
        self,
        calls: Sequence[Call],
        results: list[Any],
        todo: list[int],
        groups: dict[tuple[Hashable, bool], list[int]],
    ) -> tuple[list[int], dict[int, Hashable]]:
        """Which calls to send again, and where: NOSCRIPT after loading the script on
        its node, MOVED after refreshing the slot map, ASK to the importing node,
        TRYAGAIN after a short pause."""
        sent_to = {i: (node, ask) for (node, ask), idxs in groups.items() for i in idxs}
        again: list[int] = []
        asking: dict[int, Hashable] = {}
        loads: dict[Hashable, dict[str, str]] = defaultdict(dict)
        moved = pause = False
        for i in todo:
            r = results[i]
            if isinstance(r, NoScriptError) and calls[i].script is not None:
                node, ask = sent_to[i]
                loads[node][calls[i].script.sha] = calls[i].script.source
                if ask:  # the slot is still migrating: back to the same importing node
                    asking[i] = node
            elif isinstance(r, MovedError):
                moved = True
            elif isinstance(r, AskError):
                asking[i] = self._ask_node(r)
            elif isinstance(r, TryAgainError):
                pause = True
            else:
                continue
            again.append(i)
        for node, scripts in loads.items():
            for source in scripts.values():
                try:
                    await self._client_of(node).script_load(source)
                except RedisError:
                    pass  # its calls fail again, with the node's own error
        if moved:
            await self._moved()
        if pause:
            await asyncio.sleep(0.05)
        return again, asking

    async def node_health(self) -> dict[str, str]:
        """``{node: "ok" | "error: <type>"}`` after a PING of every node (every master
        of a cluster); never raises."""
        try:
            await self._ready()
            nodes = self._all_nodes()
        except RedisError as exc:
            return {"?": f"error: {type(exc).__name__}"}
        out: dict[str, str] = {}
        for node in nodes:
            try:
                await self._client_of(node).ping()
                out[str(node or "redis")] = "ok"
            except (RedisError, OSError) as exc:
                out[str(node or "redis")] = f"error: {type(exc).__name__}"
        return out

    def _all_nodes(self) -> list[Hashable]:
        return [None]

    async def aclose(self) -> None:
        """Close every connection of the store."""
        await self.client.aclose()


class _Unrouted:
    def __repr__(self) -> str:
        return "<no node>"


_UNROUTED = _Unrouted()


def as_feed_redis(redis: Redis | FeedRedis) -> FeedRedis:
    """``redis`` as a :class:`FeedRedis` (a plain ``Redis`` client: standalone)."""
    return redis if isinstance(redis, FeedRedis) else FeedRedis(redis)
