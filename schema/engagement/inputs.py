"""Inputs of the like, unlike, addComment and deleteComment mutations."""

from __future__ import annotations

import strawberry


@strawberry.input(description="The post to like or unlike.")
class PostTargetInput:
    post_id: strawberry.ID = strawberry.field(description="A Post global id.")


@strawberry.input
class AddCommentInput:
    post_id: strawberry.ID
    body: str = strawberry.field(
        description="1 to 2,200 Unicode code points (after NFC; an emoji with a skin tone is 2)."
    )
    parent_id: strawberry.ID | None = strawberry.field(
        default=None, description="A top-level Comment to reply to."
    )


@strawberry.input
class DeleteCommentInput:
    comment_id: strawberry.ID
