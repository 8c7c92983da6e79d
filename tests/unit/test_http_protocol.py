"""app/http_protocol.py: the writes of one loop turn leave as one write, in order."""

from __future__ import annotations

import asyncio

from app.http_protocol import CorkedTransport


class Recorder:
    """A transport that records what is written to it."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: bytes) -> None:
        assert not self.closed
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str) -> str:
        return f"info:{name}"


async def test_head_and_body_written_in_one_turn_leave_together() -> None:
    raw = Recorder()
    t = CorkedTransport(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    t.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
    assert raw.writes == []
    t.write(b"{}")
    assert raw.writes == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]
    await asyncio.sleep(0)  # the held write's flush finds nothing more
    assert len(raw.writes) == 1


async def test_a_lone_write_leaves_at_the_next_turn_and_order_is_kept() -> None:
    raw = Recorder()
    t = CorkedTransport(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    t.write(b"head")
    assert t.get_write_buffer_size() == 4
    await asyncio.sleep(0)
    assert raw.writes == [b"head"]
    t.write(b"chunk1")
    t.write(b"chunk2")
    t.write(b"chunk3")
    await asyncio.sleep(0)
    assert b"".join(raw.writes) == b"headchunk1chunk2chunk3"


async def test_close_flushes_what_is_held_and_abort_drops_it() -> None:
    loop = asyncio.get_running_loop()
    raw = Recorder()
    t = CorkedTransport(raw, loop)  # type: ignore[arg-type]
    t.write(b"bye")
    t.close()
    assert raw.writes == [b"bye"] and raw.closed
    await asyncio.sleep(0)  # the scheduled flush does not write to a closed transport
    assert raw.writes == [b"bye"]

    raw2 = Recorder()
    t2 = CorkedTransport(raw2, loop)  # type: ignore[arg-type]
    t2.write(b"lost")
    t2.abort()
    await asyncio.sleep(0)
    assert raw2.writes == [] and raw2.aborted
    assert t2.get_extra_info("peername") == "info:peername"
