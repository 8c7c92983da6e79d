"""The ranked user connections' types: search results and suggested follows."""

from __future__ import annotations

import strawberry
from strawberry import relay

from schema.refs import UserRef


@strawberry.type(description="A user found by searchUsers; the cursor is its place in the ranking.")
class UserSearchEdge:
    cursor: str
    node: UserRef
    score: int = strawberry.field(
        description="Match quality: 40 the username, 30 a username prefix, 25 the display "
        "name, 20 display-name word prefixes, 15 the same with typos corrected, 0-10 a "
        "username typo (similarity in tenths). Ties rank by followers."
    )


@strawberry.type(description="Users matching a search, best match first (Relay connection).")
class UserSearchConnection:
    edges: list[UserSearchEdge]
    page_info: relay.PageInfo


@strawberry.type(description="A suggested account; the cursor is its place in the ranking.")
class SuggestedFollowEdge:
    cursor: str
    node: UserRef
    followed_by_followees_count: int = strawberry.field(
        description="How many of your most recent followees follow this account (among "
        "their recent follows: the suggestion reads a bounded sample, docs/api/"
        "suggested-follows.md)."
    )


@strawberry.type(description="Accounts followed by people you follow, most shared first.")
class SuggestedFollowConnection:
    edges: list[SuggestedFollowEdge]
    page_info: relay.PageInfo
