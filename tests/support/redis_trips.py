"""Counting Redis round trips: one per write redis-py or adapters/resp_link.round_trip
makes, and one per batch sent through an AutoPipeline (batches of one event-loop turn
share a write, but each waits one round trip)."""

from __future__ import annotations

import contextvars
from typing import Any

#: True in the context that counts, and in the tasks it starts from then on.
COUNTING: contextvars.ContextVar[bool] = contextvars.ContextVar("counting", default=False)


class RoundTrips:
    """Counts the round trips made in the current context from now on (tasks started
    before, such as the session worker's polls or heartbeats, are not counted) while
    ``COUNTING`` is true there; ``count`` is the total so far."""

    def __init__(self, monkeypatch: Any) -> None:
        from redis.asyncio.connection import AbstractConnection

        from adapters import resp_link

        self.count = 0
        send = AbstractConnection.send_packed_command
        exchange = resp_link._exchange
        pipelined = resp_link.AutoPipeline.execute
        COUNTING.set(True)

        async def counted_send(conn: Any, command: Any, check_health: bool = True) -> None:
            if COUNTING.get():
                self.count += 1
            return await send(conn, command, check_health)

        async def counted_exchange(conn: Any, data: bytes, n: int, prefix: Any) -> Any:
            if COUNTING.get():
                self.count += 1
            return await exchange(conn, data, n, prefix)

        async def counted_pipelined(pipeline: Any, batch: Any) -> Any:
            if COUNTING.get():
                self.count += 1
            return await pipelined(pipeline, batch)

        monkeypatch.setattr(AbstractConnection, "send_packed_command", counted_send)
        monkeypatch.setattr(resp_link.AutoPipeline, "execute", counted_pipelined)
        monkeypatch.setattr(resp_link, "_exchange", counted_exchange)
