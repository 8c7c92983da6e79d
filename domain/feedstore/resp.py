"""Commands encoded once, in the Redis protocol (RESP2), for batches sent as they are.

A fan-out page is a thousand script calls that differ only in their key: their shared
arguments are encoded once per page (:meth:`Script.calls`), so the client's work per
feed is a few byte joins rather than redis-py's per-argument packing (~10 µs a call in
redis-py's cluster pipeline, ~1 µs here; see bench/README.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

Arg = bytes | str | int | float


def bulk(value: Arg) -> bytes:
    """One RESP bulk string: ``$<len>\\r\\n<bytes>\\r\\n`` (str as UTF-8, numbers as text)."""
    if isinstance(value, bytes):
        data = value
    elif isinstance(value, str):
        data = value.encode()
    elif isinstance(value, bool):  # bool is an int: refuse the ambiguity
        raise TypeError("booleans are not Redis arguments")
    elif isinstance(value, int):
        data = b"%d" % value
    elif isinstance(value, float):
        data = repr(value).encode()
    else:
        raise TypeError(f"not a Redis argument: {type(value).__name__}")
    return b"$%d\r\n%b\r\n" % (len(data), data)


def encode(*args: Arg) -> bytes:
    """A whole command: ``*<n>\\r\\n`` and each argument as a bulk string."""
    return b"*%d\r\n" % len(args) + b"".join(bulk(a) for a in args)


@dataclass(frozen=True, slots=True)
class Call:
    """One command ready to send: ``data`` is its RESP bytes, ``route`` the key whose
    hash slot decides the node (None: any node), ``script`` the script an EVALSHA runs
    (loaded on the node and sent again if the node answers NOSCRIPT)."""

    route: str | None
    data: bytes
    script: Script | None = None

    @classmethod
    def of(cls, route: str | None, *args: Arg) -> Call:
        """A plain command (``Call.of(key, "ZSCORE", key, member)``)."""
        return cls(route, encode(*args))


class Script:
    """A Lua script run by SHA-1 (EVALSHA); every key of one call must share a hash
    slot on Redis Cluster (the callers' keys of one user share the ``{user id}`` tag)."""

    __slots__ = ("sha", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()

    def call(self, keys: Sequence[str], args: Sequence[Arg]) -> Call:
        """One EVALSHA over ``keys`` (one slot) with ``args``."""
        return self.calls([keys], args)[0]

    def calls(self, key_groups: Sequence[Sequence[str]], args: Sequence[Arg]) -> list[Call]:
        """One EVALSHA per group of keys, all with the same ``args`` (encoded once)."""
        tail = b"".join(bulk(a) for a in args)
        sha = b"$40\r\n%b\r\n" % self.sha.encode()
        out = []
        for keys in key_groups:
            head = b"*%d\r\n$7\r\nEVALSHA\r\n%b%b" % (
                3 + len(keys) + len(args),
                sha,
                bulk(len(keys)),
            )
            out.append(Call(keys[0], head + b"".join(bulk(k) for k in keys) + tail, self))
        return out
