"""Redis round trips of pre-encoded commands, in one write, over the connections of a
redis-py client's pool, without redis-py's per-command layers (the pool's lock and
health probe, a task per timed send, retry, encoder, callbacks): the guards' per-request
calls and the feed store's batches.

A connection goes back to the pool only after every reply of its batch was read; on any
failure or cancellation it is disconnected first, so a pooled one never holds a stale
reply (redis-py's own commands keep the same rule).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.connection import AbstractConnection
from redis.exceptions import ConnectionError, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from adapters.resp import Arg, encode

#: ``prefix(conn)``: commands to send ahead of a batch on ``conn`` and how many.
Prefix = Callable[[AbstractConnection], tuple[bytes, int]]


class RespBatch:
    """Commands queued for one :meth:`AutoPipeline.execute` (redis-py pipeline's ``evalsha``
    signature, so a store's ``queue_*`` method can fill either)."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def evalsha(self, sha: str, numkeys: int, *keys_and_args: Arg) -> None:
        self.parts.append(encode("EVALSHA", sha, numkeys, *keys_and_args))


async def round_trip(
    client: Redis, data: bytes, n: int, prefix: Prefix | None = None
) -> tuple[list[Any], AbstractConnection]:
    """Send ``n`` commands and read their replies, with the connection used; an error
    reply is its exception instance (``NoScriptError``, ``ResponseError``), the
    replies of ``prefix``'s commands come first. Raises redis-py's ``ConnectionError``
    or ``TimeoutError`` when the connection fails or is slower than its
    ``socket_timeout``; nothing is sent twice. A pooled connection the server closed
    while it was idle (seen by the event loop: no probe) is replaced first."""
    pool = client.connection_pool
    conn = pool.get_available_connection()
    try:
        reader, writer = conn._reader, conn._writer
        if reader is not None and writer is not None:
            if reader.at_eof() or writer.transport.is_closing():
                await conn.disconnect(nowait=True)
        return await _exchange(conn, data, n, prefix), conn
    finally:
        await pool.release(conn)


async def _exchange(
    conn: AbstractConnection, data: bytes, n: int, prefix: Prefix | None
) -> list[Any]:
    try:
        await conn.connect()  # at once when connected
        if prefix is not None:
            ahead, count = prefix(conn)
            data, n = ahead + data, n + count
        writer = conn._writer  # redis-py's stream: written without a task per send
        if writer is None:
            raise ConnectionError("Redis connection closed")
        writer.write(data)
        if writer.transport.get_write_buffer_size():  # not all sent at once
            async with asyncio.timeout(conn.socket_timeout):
                await writer.drain()
        return await read_replies(conn, n)
    except BaseException as exc:
        await conn.disconnect(nowait=True)
        if isinstance(exc, RedisError) or not isinstance(exc, OSError):
            raise
        kind = RedisTimeoutError if isinstance(exc, TimeoutError) else ConnectionError
        raise kind(f"Redis round trip failed: {exc!r}") from exc


async def read_replies(conn: Any, n: int) -> list[Any]:
    """Read ``n`` replies (errors as instances); with hiredis in one loop, not one
    coroutine per reply (most of a large batch's client time)."""
    parser = getattr(conn, "_parser", None)
    reader = getattr(parser, "_reader", None)
    if (
        _HIREDIS_DONE is None
        or parser is None
        or reader is None
        or not hasattr(parser, "read_from_socket")
    ):
        out: list[Any] = []
        for _ in range(n):
            try:
                out.append(await conn.read_response())
            except ResponseError as exc:
                out.append(exc)
        return out
    out = []
    gets = reader.gets
    while len(out) < n:
        reply = gets()
        if reply is _HIREDIS_DONE:
            if conn.socket_timeout:
                async with asyncio.timeout(conn.socket_timeout):
                    await parser.read_from_socket()
            else:
                await parser.read_from_socket()
            continue
        if isinstance(reply, ConnectionError):
            raise reply
        out.append(reply)
    return out


try:  # the "not enough data" marker of redis-py's hiredis parser
    from redis._parsers.hiredis import NOT_ENOUGH_DATA as _HIREDIS_DONE
except ImportError:  # pragma: no cover - another redis-py layout: per-reply reads
    _HIREDIS_DONE = None


class AutoPipeline:
    """Concurrent callers' batches on one shared connection of ``client``'s settings:
    every batch queued in one turn of the event loop goes out in one write, and the
    replies, which Redis sends in order, go back to their callers (auto-pipelining).

    A caller waits at most the client's ``socket_timeout``; a timeout or a broken
    connection fails every batch in flight (their outcome is unknown, nothing is sent
    twice) and the next batch reconnects. A cancelled caller's replies are read and
    dropped. Raises as :func:`round_trip` does."""

    def __init__(self, client: Redis) -> None:
        if _HIREDIS_DONE is None:  # pragma: no cover - hiredis is a dependency
            raise RuntimeError("AutoPipeline reads replies with hiredis: install redis[hiredis]")
        self._pool = client.connection_pool
        self._timeout: float | None = self._pool.connection_kwargs.get("socket_timeout")
        self._conn: AbstractConnection | None = None
        self._connecting: asyncio.Task[None] | None = None
        self._reading: asyncio.Task[None] | None = None
        self._queued: list[tuple[bytes, int, asyncio.Future[list[Any]]]] = []
        self._in_flight: deque[tuple[int, asyncio.Future[list[Any]]]] = deque()
        self._flush_at_turn_end = False
        self._closing: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self.writes = 0  # batches of batches written (for tests and benchmarks)

    async def execute(self, batch: RespBatch) -> list[Any]:
        """The replies of ``batch`` in order, errors as instances."""
        if not batch.parts:
            return []
        if self._closed:
            raise ConnectionError("AutoPipeline closed")
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a connection lives on the loop that opened it
            self._forget(loop)
        done: asyncio.Future[list[Any]] = loop.create_future()
        self._queued.append((b"".join(batch.parts), len(batch.parts), done))
        if not self._flush_at_turn_end:
            self._flush_at_turn_end = True
            loop.call_soon(self._flush)
        if self._timeout is None:
            return await done
        timer = loop.call_later(self._timeout, self._expire, done)
        try:
            return await done
        finally:
            timer.cancel()

    def _expire(self, done: asyncio.Future[list[Any]]) -> None:
        """``done``'s caller waited ``socket_timeout``: fail it and everything in flight."""
        if not done.done():
            self._fail(RedisTimeoutError("Timeout reading from Redis"))
        if not done.done():  # still queued (connecting): it is skipped when flushed
            done.set_exception(RedisTimeoutError("Timeout reading from Redis"))

    def _forget(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start over on ``loop``, leaving what belonged to the previous one."""
        self._loop = loop
        self._conn = self._connecting = self._reading = None
        self._queued, self._in_flight = [], deque()
        self._flush_at_turn_end = False
        self._closing = set()

    def _flush(self) -> None:
        self._flush_at_turn_end = False
        if self._closed or not self._queued:
            return
        conn = self._conn
        if conn is None or conn._writer is None or conn._reader is None:
            self._connect()
            return
        if conn._reader.at_eof() or conn._writer.transport.is_closing():
            self._fail(ConnectionError("Redis closed the connection"))  # while idle
            self._connect()
            return
        queued, self._queued = self._queued, []
        live = [(data, n, done) for data, n, done in queued if not done.done()]
        if not live:
            return
        self._in_flight.extend((n, done) for _, n, done in live)
        conn._writer.write(b"".join(data for data, _, _ in live))
        self.writes += 1

    def _connect(self) -> None:
        if self._connecting is None or self._connecting.done():
            self._connecting = asyncio.get_running_loop().create_task(self._open())

    async def _open(self) -> None:
        conn = self._pool.make_connection()
        try:
            await conn.connect()
            if self._closed:
                raise ConnectionError("closed")
        except BaseException as exc:
            await conn.disconnect(nowait=True)
            self._connecting = None
            error = exc if isinstance(exc, RedisError) else ConnectionError(repr(exc))
            queued, self._queued = self._queued, []
            for _, _, done in queued:
                if not done.done():
                    done.set_exception(error)
            if not isinstance(exc, Exception):
                raise
            return
        self._conn, self._connecting = conn, None
        self._reading = asyncio.get_running_loop().create_task(self._read(conn))
        if self._queued:
            self._flush()

    async def _read(self, conn: AbstractConnection) -> None:
        """Hand each in-flight batch its replies, in order, until the connection fails."""
        parser: Any = conn._parser
        gets = parser._reader.gets
        got: list[Any] = []
        try:
            while True:
                reply = gets()
                if reply is _HIREDIS_DONE:
                    await parser.read_from_socket()
                    continue
                if isinstance(reply, ConnectionError):
                    raise reply
                if not self._in_flight:
                    raise ConnectionError("Redis sent a reply nobody asked for")
                got.append(reply)
                n, done = self._in_flight[0]
                if len(got) == n:
                    self._in_flight.popleft()
                    if not done.done():
                        done.set_result(got)
                    got = []
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            if self._conn is conn:
                error = exc if isinstance(exc, RedisError) else ConnectionError(repr(exc))
                self._fail(error)

    def _fail(self, error: RedisError) -> None:
        """Drop the connection and fail every batch written on it."""
        conn, self._conn = self._conn, None
        reading, self._reading = self._reading, None
        in_flight, self._in_flight = self._in_flight, deque()
        for _, done in in_flight:
            if not done.done():
                done.set_exception(error)
        if reading is not None and reading is not asyncio.current_task():
            reading.cancel()
        if conn is not None:
            task = asyncio.get_running_loop().create_task(conn.disconnect(nowait=True))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def aclose(self) -> None:
        """Close the connection; batches queued or in flight fail with ConnectionError,
        later ones too."""
        self._closed = True
        closed = ConnectionError("AutoPipeline closed")
        queued, self._queued = self._queued, []
        for _, _, done in queued:
            if not done.done():
                done.set_exception(closed)
        self._fail(closed)
        connecting, self._connecting = self._connecting, None
        if connecting is not None:
            connecting.cancel()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
