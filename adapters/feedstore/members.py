"""Sorted-set members of the feed store decoded: a post id's 16 raw bytes."""

from __future__ import annotations

import uuid

from asyncpg.pgproto.pgproto import UUID as _FastUUID


def post_id_of(member: bytes) -> uuid.UUID:
    """The post id of a 16-byte member (ValueError otherwise), as asyncpg's C
    ``uuid.UUID`` subclass: about 5x faster to build and hash."""
    if len(member) != 16:
        raise ValueError(f"a post id is 16 bytes, not {len(member)}")
    return _FastUUID(member)
