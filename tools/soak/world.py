"""What the server acknowledged, as the virtual users know it: the state each write
left (a post live or deleted, A following B, a like, a block, a comment), or unknown
when the write went unanswered (a 503 or a cut connection may have committed).

Writes that touch one pair of users (follow, unfollow, block, unblock, both ways) run
under that pair's lock, so their answers arrive in the order they committed and the
last acknowledged one is the state PostgreSQL must hold."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

#: A known state, or None: the last write of it was not answered.
State = bool | None


@dataclass
class Account:
    index: int
    username: str
    id: uuid.UUID
    gid: str
    token: str


@dataclass
class World:
    accounts: list[Account] = field(default_factory=list)
    #: post global id -> (author index, live?)
    posts: dict[str, tuple[int, State]] = field(default_factory=dict)
    #: (follower index, followee index) -> following?
    follows: dict[tuple[int, int], State] = field(default_factory=dict)
    #: (blocker index, blocked index) -> blocking?
    blocks: dict[tuple[int, int], State] = field(default_factory=dict)
    #: (liker index, post global id) -> liked?
    likes: dict[tuple[int, str], State] = field(default_factory=dict)
    #: comment global id -> (post global id, author index)
    comments: dict[str, tuple[str, int]] = field(default_factory=dict)
    _locks: dict[tuple[int, int], asyncio.Lock] = field(default_factory=dict)

    @asynccontextmanager
    async def pair(self, a: int, b: int) -> AsyncIterator[None]:
        """Hold the lock of the pair {a, b} (both directions)."""
        key = (min(a, b), max(a, b))
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            yield

    def live_posts(self, author: int | None = None) -> list[str]:
        return [
            g for g, (a, live) in self.posts.items() if live and (author is None or a == author)
        ]

    def following(self, a: int) -> list[int]:
        return [b for (f, b), on in self.follows.items() if f == a and on]

    def blocked_pair(self, a: int, b: int) -> bool:
        """A block is, or may be, in place between a and b (either way)."""
        return any(self.blocks.get(k, False) is not False for k in ((a, b), (b, a)))

    def block(self, a: int, b: int) -> None:
        """a blocked b (acknowledged): the follows both ways are gone."""
        self.blocks[(a, b)] = True
        self.follows[(a, b)] = False
        self.follows[(b, a)] = False
