"""The feed store (timelines, presence, real-time pub/sub): :class:`FeedRedis` sends
batches of :class:`~adapters.resp.Call` as one pipelined round trip per node,
all nodes at once, retrying ``NOSCRIPT``, ``MOVED``, ``ASK`` and ``TRYAGAIN``.
Standalone here; the cluster in :mod:`adapters.feedstore.cluster`.
"""

from __future__ import annotations

import asyncio
import re
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

from adapters.resp import Call, Script
from adapters.resp_link import round_trip

#: Rounds of re-sending per batch (NOSCRIPT, MOVED, ASK, TRYAGAIN), after the first.
RETRY_ROUNDS = 3
_PENDING = object()
_ASKING = b"*1\r\n$6\r\nASKING\r\n"
_INFO_SERVER = b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n"
_RUN_ID = re.compile(rb"run_id:([0-9a-f]{13})")


def run_stamp(run_id: bytes | str) -> int:
    """A server run's stamp: the first 52 bits of ``run_id`` (exact in a double; the
    timeline scripts compute the same in Lua)."""
    text = run_id.decode() if isinstance(run_id, bytes) else run_id
    return int(text[:13], 16)


def _run_of(info: bytes) -> int:
    """The run stamp in an ``INFO server`` reply."""
    found = _RUN_ID.search(info)
    if found is None:
        raise ResponseError("INFO server without a run_id")
    return run_stamp(found.group(1))


class FeedRedis:
    """The feed store on a standalone Redis; ``client`` (binary replies) serves single
    commands."""

    is_cluster = False

    def __init__(self, client: Redis) -> None:
        self.client = client
        self._version: tuple[int, ...] | None = None

    def __getattr__(self, name: str) -> Any:
        """Other redis-py commands: the client's (tools, tests)."""
        if name.startswith("_") or name == "client":
            raise AttributeError(name)
        return getattr(self.client, name)

    def slot_groups(
        self, keys: Sequence[str], stride: int = 1
    ) -> list[tuple[int | None, list[int]]]:
        """``(slot, owner indexes)`` per script call (here one, slot None); owner ``i``:
        ``keys[i*stride:][:stride]``."""
        return [(None, list(range(len(keys) // stride)))] if keys else []

    def _node_of(self, route: str | None, slot: int | None = None) -> Hashable:
        return None

    def _client_of(self, node: Hashable) -> Redis:
        return self.client

    async def ready(self) -> None:
        """Learn the routing (cluster: raises RedisError if no node answers)."""
        await self._ready()

    async def _ready(self) -> None:
        """Make sure the node map is known."""

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
        """Whether to use SPUBLISH/SSUBSCRIBE (a cluster on Redis >= 7)."""
        return False

    async def execute(
        self,
        calls: Sequence[Call],
        *,
        raise_on_error: bool = True,
        runs: list[int | None] | None = None,
    ) -> list[Any]:
        """Send ``calls`` and return their raw replies in order.

        A failed node fails its calls with ``ConnectionError``; the others complete.
        With ``raise_on_error`` the first error is raised once every node answered,
        else errors stand in for replies. ``runs`` gets each reply's :func:`run_stamp`
        (None where it failed), learned on (re)connect, so always the replying run's.
        """
        if runs is not None:
            runs[:] = [None] * len(calls)
        if not calls:
            return []
        await self._ready()
        results: list[Any] = [_PENDING] * len(calls)
        todo = list(range(len(calls)))
        asking: dict[int, Hashable] = {}
        for round_ in range(RETRY_ROUNDS + 1):
            groups: dict[tuple[Hashable, bool], list[int]] = defaultdict(list)
            by_slot: dict[int, tuple[Hashable, bool]] = {}  # the map lookups of a batch
            for i in todo:
                call = calls[i]
                if i in asking:
                    groups[(asking[i], True)].append(i)
                elif call.slot is not None and call.slot in by_slot:
                    groups[by_slot[call.slot]].append(i)
                else:
                    target = (self._node_for(call, results, i), False)
                    if call.slot is not None:
                        by_slot[call.slot] = target
                    groups[target].append(i)
            unrouted = groups.pop((_UNROUTED, False), [])
            for i in unrouted:  # no node serves their slot: the first one's error
                if results[i] is _PENDING:
                    results[i] = results[unrouted[0]]
            if len(groups) == 1:  # one node (always, on a standalone Redis): no task
                (((node, ask), idxs),) = groups.items()
                await self._send(node, ask, idxs, calls, results, runs)
            else:
                await asyncio.gather(
                    *(
                        self._send(node, ask, idxs, calls, results, runs)
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
            return self._node_of(call.route, call.slot)
        except RedisError as exc:  # no node serves the slot (yet)
            results[i] = exc
            return _UNROUTED

    async def _send(
        self,
        node: Hashable,
        asking: bool,
        idxs: list[int],
        calls: Sequence[Call],
        results: list[Any],
        runs: list[int | None] | None = None,
    ) -> None:
        """Send ``idxs`` to ``node`` in one write and store the replies; a connection
        failure fails those left without one."""
        if asking:
            data = b"".join(_ASKING + calls[i].data for i in idxs)
        else:
            data = b"".join(calls[i].data for i in idxs)
        n = len(idxs) * (2 if asking else 1)
        try:
            if runs is None:
                replies, run = await self._round_trip(node, data, n), None
            else:
                replies, run = await self._exchange(node, data, n, learn_run=True)
        except (RedisError, OSError) as exc:
            self._fail(node, idxs, results, exc)
            return
        if asking:  # each ASKING's own OK (or error) first
            replies = replies[1::2]
        for i, reply in zip(idxs, replies, strict=True):
            results[i] = reply
            if runs is not None:
                runs[i] = run

    async def _round_trip(self, node: Hashable, data: bytes, n: int) -> list[Any]:
        """Write ``n`` commands and read ``n`` replies (errors as instances). Raises
        RedisError / OSError on failure, dropping the half-read connection."""
        replies, _ = await self._exchange(node, data, n, learn_run=False)
        return replies

    async def _exchange(
        self, node: Hashable, data: bytes, n: int, *, learn_run: bool
    ) -> tuple[list[Any], int | None]:
        """:meth:`_round_trip`, with ``learn_run`` also the server's run stamp (an
        ``INFO server`` ahead of the first batch after a (re)connect)."""
        client = self._client_of(node)
        if not learn_run:
            replies, _ = await round_trip(client, data, n)
            return replies, None
        replies, conn = await round_trip(client, data, n, _info_when_unknown)
        if len(replies) > n:
            info, replies = replies[0], replies[1:]
            if isinstance(info, Exception):
                raise info
            setattr(conn, "_roost_run", (conn._writer, _run_of(info)))  # noqa: B010 (redis-py's object)
        return replies, getattr(conn, "_roost_run")[1]  # noqa: B009

    async def eval_by_slot(
        self, script: Script, keys: Sequence[str], stride: int, args: Sequence[Any]
    ) -> list[tuple[list[int], Any]]:
        """Run ``script`` over the owners' keys (as :meth:`slot_groups`) in as few calls
        as possible; ``(owner indexes, reply)`` per call, unordered. Raises RedisError
        once every node answered if a call failed."""
        groups = self.slot_groups(keys, stride)
        replies = await self.execute(script.grouped_calls(keys, groups, stride, args))
        return [(owners, r) for (_, owners), r in zip(groups, replies, strict=True)]

    def _fail(
        self, node: Hashable, idxs: list[int], results: list[Any], exc: BaseException
    ) -> None:
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
        """Calls to resend and where (NOSCRIPT: load it; MOVED: refresh; ASK: the
        importing node; TRYAGAIN: pause)."""
        sent_to = {i: (node, ask) for (node, ask), idxs in groups.items() for i in idxs}
        again: list[int] = []
        asking: dict[int, Hashable] = {}
        loads: dict[Hashable, dict[str, str]] = defaultdict(dict)
        moved = pause = False
        for i in todo:
            r = results[i]
            script = calls[i].script
            if isinstance(r, NoScriptError) and script is not None:
                node, ask = sent_to[i]
                loads[node][script.sha] = script.source
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
        """``{node: "ok" | "error: <type>"}`` by PING of every master; never raises."""
        try:
            await self._ready()
            nodes = self._all_nodes()
        except RedisError as exc:
            return {"?": f"error: {type(exc).__name__}"}
        out: dict[str, str] = {}
        for node in nodes:
            try:
                await self._client_of(node).ping()
                out["redis" if node is None else str(node)] = "ok"
            except (RedisError, OSError) as exc:
                out["redis" if node is None else str(node)] = f"error: {type(exc).__name__}"
        return out

    def _all_nodes(self) -> list[Hashable]:
        return [None]

    async def aclose(self) -> None:
        """Close every connection of the store."""
        await self.client.aclose()


def _info_when_unknown(conn: Any) -> tuple[bytes, int]:
    """``INFO server`` ahead of a batch on a connection whose server run is unknown."""
    known = getattr(conn, "_roost_run", None)
    return (b"", 0) if known is not None and known[0] is conn._writer else (_INFO_SERVER, 1)


class _Unrouted:
    def __repr__(self) -> str:
        return "<no node>"


_UNROUTED = _Unrouted()


def as_feed_redis(redis: Redis | FeedRedis) -> FeedRedis:
    """``redis`` as a :class:`FeedRedis` (a plain ``Redis`` client: standalone)."""
    return redis if isinstance(redis, FeedRedis) else FeedRedis(redis)
