"""Payloads and result unions of the createPost and deletePost mutations."""

from __future__ import annotations

from typing import Annotated

import strawberry

from schema.errors import NotFoundError, NotPostAuthorError, ValidationError
from schema.posts.types import Post


@strawberry.type(description="The post is published; followers' feeds receive it shortly.")
class CreatePostSuccess:
    post: Post


@strawberry.type(description="The post is deleted (also when it already was).")
class DeletePostSuccess:
    deleted_post_id: strawberry.ID


CreatePostResult = Annotated[
    CreatePostSuccess | ValidationError, strawberry.union("CreatePostResult")
]
DeletePostResult = Annotated[
    DeletePostSuccess | ValidationError | NotFoundError | NotPostAuthorError,
    strawberry.union("DeletePostResult"),
]
