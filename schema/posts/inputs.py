"""Inputs of the createPost and deletePost mutations."""

from __future__ import annotations

import strawberry

from schema.posts.types import MediaKind


@strawberry.input(description="A media file to attach: an absolute http(s) URL and its kind.")
class MediaInput:
    url: str
    kind: MediaKind


@strawberry.input
class CreatePostInput:
    caption: str = strawberry.field(default="", description="Up to 2,200 characters.")
    media: list[MediaInput] = strawberry.field(default_factory=list, description="At most 10.")


@strawberry.input
class DeletePostInput:
    post_id: strawberry.ID = strawberry.field(description="A Post global id.")
