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
    """Commands queued for one :func:`execute` (redis-py pipeline's ``evalsha``
    signature, so a store's ``queue_*`` method can fill either)."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def evalsha(self, sha: str, numkeys: int, *keys_and_args: Arg) -> None:
        self.parts.append(encode("EVALSHA", sha, numkeys, *keys_and_args))

    def __len__(self) -> int:
        return len(self.parts)


async def execute(client: Redis, batch: RespBatch) -> list[Any]:
    """The replies of ``batch`` in order (see :func:`round_trip`)."""
    if not batch.parts:
        return []
    replies, _ = await round_trip(client, b"".join(batch.parts), len(batch.parts))
    return replies


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
