"""Explore's connection and the trending hashtag type (docs/api/explore.md "Explore")."""

from __future__ import annotations

import strawberry
from strawberry import relay

from schema.explore.hashtags import Hashtag
from schema.posts.types import PostEdge


@strawberry.type(
    description="A page of explore: trending posts of accounts you do not follow, then of "
    "those you follow (Relay connection)."
)
class ExploreConnection:
    edges: list[PostEdge]
    page_info: relay.PageInfo


@strawberry.type(description="A hashtag trending for you, with what makes it trend.")
class TrendingHashtag:
    name: str
    hashtag: Hashtag
    post_count: int = strawberry.field(
        description="Trending posts you may see in explore that carry the tag."
    )
    engagement_count: int = strawberry.field(
        description="Their likes and comments of the last 24 hours."
    )
