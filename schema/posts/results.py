"""Payloads and result unions of the createPost, editPost and deletePost mutations."""

from __future__ import annotations

from typing import Annotated

import strawberry

from schema.errors import (
    EditWindowClosedError,
    MediaUrlNotAllowedError,
    NotFoundError,
    NotPostAuthorError,
    UploadNotFoundError,
    UploadUnusableError,
    ValidationError,
)
from schema.posts.types import Post


@strawberry.type(
    description="The post is created: PUBLISHED at once (followers' feeds receive it "
    "shortly), or PROCESSING while its uploads are processed (you are notified when it is "
    "published or failed)."
)
class CreatePostSuccess:
    post: Post


@strawberry.type(
    description="The caption is replaced (the old one is in `editHistory`, `editedAt` is "
    "set; the same caption again changes nothing)."
)
class EditPostSuccess:
    post: Post


@strawberry.type(description="The post is deleted (also when it already was).")
class DeletePostSuccess:
    deleted_post_id: strawberry.ID


CreatePostResult = Annotated[
    CreatePostSuccess
    | ValidationError
    | UploadNotFoundError
    | UploadUnusableError
    | MediaUrlNotAllowedError,
    strawberry.union("CreatePostResult"),
]
EditPostResult = Annotated[
    EditPostSuccess | ValidationError | NotFoundError | NotPostAuthorError | EditWindowClosedError,
    strawberry.union("EditPostResult"),
]
DeletePostResult = Annotated[
    DeletePostSuccess | ValidationError | NotFoundError | NotPostAuthorError,
    strawberry.union("DeletePostResult"),
]
