"""The home feed's order argument and connection type (docs/architecture/home-feed.md "Home
feed")."""

from __future__ import annotations

from enum import Enum

import strawberry
from strawberry import relay

from schema.posts.types import PostEdge


@strawberry.enum(description="How the home feed is ordered.")
class FeedOrder(Enum):
    RECENT = strawberry.enum_value(
        "RECENT", description="Newest first, by (createdAt, id): the default."
    )
    RANKED = strawberry.enum_value(
        "RANKED",
        description="By score: recency (6-hour half-life), engagement of the last hour "
        "against the author's average, authors you liked or commented on (x1.5) and "
        "the media kind you mostly engage with (x1.2). The order is frozen for the "
        "pages of one walk; past its window (the newest posts) it goes on newest "
        "first. A cursor idle longer than FEED_RANKED_FREEZE_S fails CURSOR_EXPIRED.",
    )


@strawberry.type(description="A page of the home feed, newest first (Relay connection).")
class FeedConnection:
    edges: list[PostEdge]
    page_info: relay.PageInfo
