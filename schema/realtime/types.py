"""The subscription payload types that are not nodes of another area."""

from __future__ import annotations

import strawberry

from schema.posts.types import Post


@strawberry.type(
    description="A post's like and comment counts after one of them, or its caption, changed."
)
class PostEngagement:
    post: Post
    like_count: int = strawberry.field(description="Likes, exact, read when the event arrived.")
    comment_count: int = strawberry.field(
        description="Live comments and replies, exact, read when the event arrived."
    )
