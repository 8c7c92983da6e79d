"""Redis round trips of a few pre-encoded commands, in one write, over connections of
their own: the per-request guard calls (rate limit, session admission) without
redis-py's per-command layers (pool lock and health probe, retry, encoder, callbacks).

A connection is reused only after every reply of its batch was read; on any failure or
cancellation it is dropped, so an idle one never holds a stale reply.
"""

from __future__ import annotations

import asyncio
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.connection import AbstractConnection
from redis.exceptions import ConnectionError, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from adapters.feedstore.resp import Arg, encode
from adapters.feedstore.store import _read_replies

#: Idle connections kept; more in flight at once are opened and closed after use.
MAX_IDLE = 32


class RespBatch:
    """Commands queued for one :meth:`RespLink.execute` (redis-py pipeline's
    ``evalsha`` signature, so a store's ``queue_*`` method can fill either)."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def evalsha(self, sha: str, numkeys: int, *keys_and_args: Arg) -> None:
        self.parts.append(encode("EVALSHA", sha, numkeys, *keys_and_args))

    def __len__(self) -> int:
        return len(self.parts)


class RespLink:
    """Round trips to the server of ``client`` (its address, credentials and
    ``socket_timeout``)."""

    def __init__(self, client: Redis) -> None:
        self._pool = client.connection_pool
        self._idle: list[AbstractConnection] = []

    async def execute(self, batch: RespBatch) -> list[Any]:
        """The replies of ``batch`` in order, a command's error reply as its exception
        instance (``NoScriptError``, ``ResponseError``). Raises redis-py's
        ``ConnectionError`` or ``TimeoutError`` when the connection fails or is slower
        than its ``socket_timeout``. On an idle connection found closed (the server
        restarted or dropped it) the batch is sent again on another, so its commands
        must bear running twice (a rate-limit charge, a session check)."""
        if not batch.parts:
            return []
        data = b"".join(batch.parts)
        while self._idle:
            try:
                return await self._exchange(self._idle.pop(), data, len(batch.parts))
            except ConnectionError:
                continue  # closed while idle: the next one, or a new connection
        return await self._exchange(self._pool.make_connection(), data, len(batch.parts))

    async def _exchange(self, conn: AbstractConnection, data: bytes, n: int) -> list[Any]:
        try:
            await conn.connect()  # at once when connected
            writer = conn._writer  # redis-py's stream: written without a task per send
            if writer is None:
                raise ConnectionError("Redis connection closed")
            writer.write(data)
            if writer.transport.get_write_buffer_size():  # not all sent at once
                async with asyncio.timeout(conn.socket_timeout):
                    await writer.drain()
            replies = await _read_replies(conn, n)
        except BaseException as exc:
            await conn.disconnect(nowait=True)
            if isinstance(exc, RedisError) or not isinstance(exc, OSError):
                raise
            kind = RedisTimeoutError if isinstance(exc, TimeoutError) else ConnectionError
            raise kind(f"Redis round trip failed: {exc!r}") from exc
        if len(self._idle) < MAX_IDLE:
            self._idle.append(conn)
        else:
            await conn.disconnect()
        return replies

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.disconnect()
