"""The blocked and muted accounts connection types."""

from __future__ import annotations

import datetime as dt

import strawberry
from strawberry import relay

from schema.refs import UserRef


@strawberry.type(description="An account you blocked; the cursor is the block's position.")
class BlockedUserEdge:
    cursor: str
    node: UserRef
    blocked_at: dt.datetime


@strawberry.type(description="The accounts you blocked, newest first (Relay connection).")
class BlockedUserConnection:
    edges: list[BlockedUserEdge]
    page_info: relay.PageInfo


@strawberry.type(description="An account you muted; the cursor is the mute's position.")
class MutedUserEdge:
    cursor: str
    node: UserRef
    muted_at: dt.datetime


@strawberry.type(description="The accounts you muted, newest first (Relay connection).")
class MutedUserConnection:
    edges: list[MutedUserEdge]
    page_info: relay.PageInfo
