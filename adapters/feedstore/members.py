"""Sorted-set members of the feed store decoded: a post id's 16 raw bytes."""

from __future__ import annotations

import uuid

from asyncpg.pgproto.pgproto import UUID as _FastUUID


def post_id_of(member: bytes) -> uuid.UUID:
    """The post id of a 16-byte member (ValueError for another length). The UUID is
    asyncpg's (a ``uuid.UUID`` subclass, as its rows hold): equal, hashed and ordered
    like the standard one, but built, hashed and printed in C, about 5x faster, and a
    ranked window decodes a hundred per page."""
    if len(member) != 16:
        raise ValueError(f"a post id is 16 bytes, not {len(member)}")
    return _FastUUID(member)
