"""uvicorn's httptools protocol with the writes of one loop turn sent together.

uvicorn writes a response's status line and headers, then its body, as two writes of
the transport: two ``send`` system calls, and on loopback or a LAN two trips through
the network stack for every response. :class:`CorkedTransport` holds a write until the
next write or the loop's next turn, whichever comes first, so a response sent in one
go (Starlette's ``Response``: head, then body) leaves in one ``send``; a streamed one
is not delayed past the turn it was written in.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class CorkedTransport:
    """A transport whose writes within one loop turn go out as one write, in order."""

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        held = self._held
        if held is None:
            self._held = bytes(data)
            self._loop.call_soon(self._flush)
        else:  # the second write of the turn: both leave now
            self._held = None
            self._transport.write(held + bytes(data))

    def writelines(self, chunks: Any) -> None:
        self.write(b"".join(chunks))

    def _flush(self) -> None:
        held = self._held
        if held is not None:
            self._held = None
            if not self._transport.is_closing():
                self._transport.write(held)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + len(self._held or b"")

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def abort(self) -> None:
        self._held = None
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class CorkedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's ``httptools`` protocol over a :class:`CorkedTransport`."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CorkedTransport(transport, self.loop))  # type: ignore[arg-type]
