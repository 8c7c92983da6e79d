"""Commands pre-encoded in RESP2; a batch's shared arguments are encoded once."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import NamedTuple

Arg = bytes | str | int | float


def bulk(value: Arg) -> bytes:
    """One RESP bulk string (str as UTF-8, numbers as text)."""
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
    """A whole RESP command."""
    return b"*%d\r\n" % len(args) + b"".join(bulk(a) for a in args)


class Call(NamedTuple):
    """RESP ``data``; ``route`` the key choosing the node (None: any), ``slot`` its
    slot if known, ``script`` the EVALSHA's script (loaded on NOSCRIPT)."""

    route: str | None
    data: bytes
    script: Script | None = None
    slot: int | None = None

    @classmethod
    def of(cls, route: str | None, *args: Arg) -> Call:
        """A plain command (``Call.of(key, "ZSCORE", key, member)``)."""
        return cls(route, encode(*args))


class Script:
    """A Lua script run by EVALSHA; one call's keys must share a cluster hash slot."""

    __slots__ = ("sha", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()

    def call(self, keys: Sequence[str], args: Sequence[Arg]) -> Call:
        """One EVALSHA over ``keys`` (one slot) with ``args``."""
        return self.calls([keys], args)[0]

    def calls(self, key_groups: Sequence[Sequence[str]], args: Sequence[Arg]) -> list[Call]:
        """One EVALSHA per group of keys, all with the same ``args`` (encoded once)."""
        return self.grouped_calls(
            [k for g in key_groups for k in g],
            _consecutive([len(g) for g in key_groups]),
            1,
            args,
        )

    def one_key_parts(self, args: Sequence[Arg]) -> tuple[bytes, bytes]:
        """The bytes before and after the key of a one-key call with ``args``."""
        head = b"*%d\r\n$7\r\nEVALSHA\r\n$40\r\n%b\r\n$1\r\n1\r\n" % (
            4 + len(args),
            self.sha.encode(),
        )
        return head, b"".join(bulk(a) for a in args)

    def grouped_calls(
        self,
        keys: Sequence[str],
        groups: Sequence[tuple[int | None, Sequence[int]]],
        stride: int,
        args: Sequence[Arg],
    ) -> list[Call]:
        """One EVALSHA per ``FeedRedis.slot_groups`` group, ``args`` encoded once."""
        tail = b"".join(bulk(a) for a in args)
        sha = b"$40\r\n%b\r\n" % self.sha.encode()
        # One key per call is the common case on a cluster: its head is shared too.
        one = b"*%d\r\n$7\r\nEVALSHA\r\n%b$1\r\n1\r\n" % (4 + len(args), sha)
        out = []
        for slot, owners in groups:
            if stride == 1 and len(owners) == 1:
                key = keys[owners[0]]
                k = key.encode()
                data = b"%b$%d\r\n%b\r\n%b" % (one, len(k), k, tail)
            else:
                key = keys[owners[0] * stride]
                group = [k for i in owners for k in keys[i * stride : (i + 1) * stride]]
                head = b"*%d\r\n$7\r\nEVALSHA\r\n%b%b" % (
                    3 + len(group) + len(args),
                    sha,
                    bulk(len(group)),
                )
                data = head + b"".join(bulk(k) for k in group) + tail
            out.append(Call(key, data, self, slot))
        return out


def _consecutive(sizes: Sequence[int]) -> list[tuple[None, list[int]]]:
    """Groups of consecutive indexes of the given sizes."""
    out, start = [], 0
    for n in sizes:
        out.append((None, list(range(start, start + n))))
        start += n
    return out
