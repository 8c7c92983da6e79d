"""The pending follow requests connection type."""

from __future__ import annotations

import datetime as dt

import strawberry
from strawberry import relay

from schema.refs import UserRef


@strawberry.type(description="A pending follow request; the cursor is the request's position.")
class FollowRequestEdge:
    cursor: str
    node: UserRef = strawberry.field(description="Who asks to follow you.")
    requested_at: dt.datetime


@strawberry.type(description="A page of pending follow requests, newest first (Relay connection).")
class FollowRequestConnection:
    edges: list[FollowRequestEdge]
    page_info: relay.PageInfo
