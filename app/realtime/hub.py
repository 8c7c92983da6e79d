"""One Redis pub/sub connection per API process for all local subscribers: the adapter behind
:class:`domain.realtime.ports.Subscriptions` (docs/api/subscriptions.md); it keeps in ``rt:online``
the users with an open feed subscription (fan-out publishes only to them)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Iterable
from typing import Any

from redis.asyncio import Redis

from adapters.feedstore import Call, FeedRedis, as_feed_redis
from app.realtime.links import PlainLink, ShardedLink, open_link
from domain import metrics
from domain.realtime.channels import ONLINE_KEY, decode_event, now_ms
from domain.realtime.ports import HubClosedError

__all__ = ["BATCH", "Hub", "HubClosedError", "Subscription"]

log = logging.getLogger("roost.realtime")

#: Channels per SUBSCRIBE / UNSUBSCRIBE command, and members per presence ZADD.
BATCH = 1_000


class Subscription:
    """One local subscriber of one channel: a bounded queue of decoded events that drops
    its oldest when full (``dropped`` counts them)."""

    __slots__ = ("_closed", "_queue", "_wakeup", "channel", "dropped", "maxsize", "types")

    def __init__(self, channel: str, types: frozenset[str] | None, maxsize: int) -> None:
        self.channel = channel
        self.types = types
        self.maxsize = maxsize
        self.dropped = 0
        self._queue: collections.deque[dict[str, Any]] = collections.deque()
        self._wakeup = asyncio.Event()
        self._closed = False

    def _deliver(self, event: dict[str, Any]) -> None:
        if self.types is not None and event["type"] not in self.types:
            return
        if len(self._queue) >= self.maxsize:
            self._queue.popleft()
            self.dropped += 1
            metrics.current().realtime_dropped()
        self._queue.append(event)
        self._wakeup.set()

    def _close(self) -> None:
        self._closed = True
        self._wakeup.set()

    async def get(self) -> dict[str, Any]:
        """The next event (``{"type": ..., <ids>}``), waiting; HubClosedError once stopped."""
        while not self._queue:
            if self._closed:
                raise HubClosedError()
            self._wakeup.clear()
            await self._wakeup.wait()
        return self._queue.popleft()

    def pending(self) -> list[dict[str, Any]]:
        """Take every event already queued, without waiting (to coalesce a burst)."""
        events = list(self._queue)
        self._queue.clear()
        return events


class Hub:
    """One Redis pub/sub connection per process for all local subscribers (``async with
    hub.subscribe(channel) as sub``), started lazily: three tasks, none per subscriber."""

    def __init__(
        self,
        redis: Redis | FeedRedis,
        *,
        presence_ttl_s: float = 30.0,
        queue_size: int = 256,
        confirm_timeout_s: float = 10.0,
    ) -> None:
        self.store = as_feed_redis(redis)
        self.redis = self.store.client
        self.presence_ttl_ms = int(presence_ttl_s * 1000)
        self.queue_size = queue_size
        self.confirm_timeout_s = confirm_timeout_s
        self._link: PlainLink | ShardedLink | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._starting: asyncio.Lock | None = None
        self._closed = False
        self._subs: dict[str, set[Subscription]] = {}
        # SUBSCRIBEs sent and confirmed per channel: Redis replies in order, so the k-th
        # confirmation tells the k-th SUBSCRIBE's newcomer that it is live.
        self._sent: set[str] = set()
        self._sent_gen: dict[str, int] = {}
        self._acked: dict[str, int] = {}
        self._ack_waiters: dict[str, list[tuple[int, asyncio.Future[None]]]] = {}
        self._dirty = asyncio.Event()
        self._online: collections.Counter[uuid.UUID] = collections.Counter()
        self.opened_total = 0  # subscriptions entered since start
        self.closed_total = 0  # ... and left

    @property
    def channel_count(self) -> int:
        """Channels with at least one local subscriber."""
        return len(self._subs)

    @property
    def subscriber_count(self) -> int:
        """Local subscribers over all channels."""
        return sum(len(s) for s in self._subs.values())

    @property
    def online_users(self) -> int:
        """Users whose presence this process keeps (open feed subscriptions)."""
        return len(self._online)

    async def start(self) -> None:
        """Open the pub/sub connection and start the three tasks (idempotent)."""
        if self._tasks:
            return
        if self._closed:
            raise HubClosedError()
        self._starting = self._starting or asyncio.Lock()
        async with self._starting:
            if self._tasks:
                return
            self._link = await open_link(self.store)
            self._tasks = [
                asyncio.create_task(self._read(), name="realtime-hub-reader"),
                asyncio.create_task(self._sync(), name="realtime-hub-sync"),
                asyncio.create_task(self._heartbeat(), name="realtime-hub-heartbeat"),
            ]

    async def close(self) -> None:
        """Stop the tasks, end every subscription (HubClosedError) and close the
        connection; Redis drops the channels with it."""
        self._closed = True
        for task in self._tasks:
            task.cancel()
        # gather, not `suppress(CancelledError): await task`: that would also swallow a
        # cancellation of close() itself.
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        for subs in self._subs.values():
            for sub in subs:
                sub._close()
        for waiters in self._ack_waiters.values():
            for _, fut in waiters:
                if not fut.done():
                    fut.set_exception(HubClosedError())
        if self._link is not None:
            with contextlib.suppress(Exception):
                await self._link.aclose()
            self._link = None

    @contextlib.asynccontextmanager
    async def subscribe(
        self,
        channel: str,
        *,
        types: Iterable[str] | None = None,
        presence: uuid.UUID | None = None,
    ) -> AsyncIterator[Subscription]:
        """:meth:`domain.realtime.ports.Subscriptions.subscribe`; TimeoutError past
        ``confirm_timeout_s``."""
        await self.start()
        sub = Subscription(
            channel, frozenset(types) if types is not None else None, self.queue_size
        )
        subs = self._subs.setdefault(channel, set())
        subs.add(sub)
        self.opened_total += 1
        counted: uuid.UUID | None = None  # the presence this subscription counts in
        try:
            needed = self._sent_gen.get(channel, 0) + (0 if channel in self._sent else 1)
            if self._acked.get(channel, 0) < needed:
                self._dirty.set()
                fut = asyncio.get_running_loop().create_future()
                self._ack_waiters.setdefault(channel, []).append((needed, fut))
                try:
                    # Not asyncio.wait_for: on 3.11 it can swallow a cancellation landing
                    # with the confirmation, leaving the subscription on a closed socket.
                    async with asyncio.timeout(self.confirm_timeout_s):
                        await fut
                finally:
                    self._forget_waiter(channel, fut)
            if presence is not None:
                counted = presence
                self._online[presence] += 1
                if self._online[presence] == 1:
                    await self._mark_online([presence])
            yield sub
        finally:
            self.closed_total += 1
            subs.discard(sub)
            if not subs and self._subs.get(channel) is subs:
                del self._subs[channel]
                self._dirty.set()
            if counted is not None:
                self._online[counted] -= 1
                if self._online[counted] <= 0:
                    # Presence lapses within presence_ttl: another process may hold
                    # the same user, so this one never removes it.
                    del self._online[counted]

    def _forget_waiter(self, channel: str, fut: asyncio.Future[None]) -> None:
        waiters = self._ack_waiters.get(channel)
        if waiters is None:
            return
        waiters[:] = [w for w in waiters if w[1] is not fut]
        if not waiters:
            del self._ack_waiters[channel]

    async def _sync(self) -> None:
        """Bring Redis's channel set to the wanted one: batched UNSUBSCRIBE, SUBSCRIBE."""
        assert self._link is not None
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            try:
                gone = [c for c in self._sent if c not in self._subs]
                for i in range(0, len(gone), BATCH):
                    chunk = gone[i : i + BATCH]
                    self._sent.difference_update(chunk)
                    await self._link.unsubscribe(chunk)
                new = [c for c in self._subs if c not in self._sent]
                for i in range(0, len(new), BATCH):
                    chunk = new[i : i + BATCH]
                    await self._link.subscribe(chunk)
                    self._sent.update(chunk)
                    for c in chunk:
                        self._sent_gen[c] = self._sent_gen.get(c, 0) + 1
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("realtime hub: (un)subscribe failed; retrying", exc_info=True)
                await asyncio.sleep(0.5)
                self._dirty.set()

    async def _read(self) -> None:
        """Deliver the link's messages to local subscribers and count confirmations. The
        link reconnects and resubscribes by itself; events published meanwhile are lost."""
        assert self._link is not None
        link = self._link
        while True:
            msg = await link.get_message()
            if msg is None:
                continue
            kind, channel = msg["type"], msg["channel"]
            if kind == "message":
                subs = self._subs.get(channel)
                if subs:
                    event = decode_event(msg["data"])
                    if event is not None:
                        for sub in tuple(subs):
                            sub._deliver(event)
            elif kind == "subscribe":
                self._confirmed(channel)
            elif kind == "unsubscribe":
                self._forget_channel(channel)

    def _forget_channel(self, channel: str) -> None:
        """Drop the counters of a channel nobody wants, once Redis answered all its
        SUBSCRIBEs (a channel wanted again keeps counting, or a waiter would hang)."""
        if channel in self._sent or channel in self._subs or channel in self._ack_waiters:
            return
        if self._acked.get(channel, 0) >= self._sent_gen.get(channel, 0):
            self._acked.pop(channel, None)
            self._sent_gen.pop(channel, None)

    def _confirmed(self, channel: str) -> None:
        acked = self._acked[channel] = self._acked.get(channel, 0) + 1
        for needed, fut in self._ack_waiters.get(channel, ()):
            if needed <= acked and not fut.done():
                fut.set_result(None)

    async def _mark_online(self, users: list[uuid.UUID]) -> None:
        until = now_ms() + self.presence_ttl_ms
        calls = []
        for i in range(0, len(users), BATCH):
            pairs = [x for u in users[i : i + BATCH] for x in (until, str(u))]
            calls.append(Call.of(ONLINE_KEY, "ZADD", ONLINE_KEY, "GT", *pairs))
        await self.store.execute(calls)

    async def _heartbeat(self) -> None:
        """Every third of the presence TTL: extend this process's users, and drop the
        expired entries of every process."""
        while True:
            await asyncio.sleep(self.presence_ttl_ms / 3000)
            try:
                await self._mark_online(list(self._online))
                await self.store.execute(
                    [Call.of(ONLINE_KEY, "ZREMRANGEBYSCORE", ONLINE_KEY, "-inf", now_ms())]
                )
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("realtime hub: presence heartbeat failed", exc_info=True)
