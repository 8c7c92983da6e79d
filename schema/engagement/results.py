"""Payloads and result unions of the like, unlike, addComment and deleteComment
mutations."""

from __future__ import annotations

from typing import Annotated

import strawberry

from schema.engagement.types import Comment
from schema.errors import NotCommentModeratorError, NotFoundError, ValidationError
from schema.refs import PostRef


@strawberry.type(description="The viewer likes `post` now (also when they already did).")
class LikePostSuccess:
    post: PostRef


@strawberry.type(description="The viewer does not like `post` now.")
class UnlikePostSuccess:
    post: PostRef


@strawberry.type
class AddCommentSuccess:
    comment: Comment


@strawberry.type(description="The comment (and its replies) are deleted.")
class DeleteCommentSuccess:
    deleted_comment_id: strawberry.ID
    deleted_count: int
    post: PostRef | None = strawberry.field(
        description="The post the comment was on, with its `commentCount` after the "
        "deletion (null if you can no longer see it)."
    )


LikePostResult = Annotated[
    LikePostSuccess | ValidationError | NotFoundError, strawberry.union("LikePostResult")
]
UnlikePostResult = Annotated[
    UnlikePostSuccess | ValidationError | NotFoundError, strawberry.union("UnlikePostResult")
]
AddCommentResult = Annotated[
    AddCommentSuccess | ValidationError | NotFoundError, strawberry.union("AddCommentResult")
]
DeleteCommentResult = Annotated[
    DeleteCommentSuccess | ValidationError | NotFoundError | NotCommentModeratorError,
    strawberry.union("DeleteCommentResult"),
]
