"""Engagement mutations: likePost, unlikePost, addComment, deleteComment."""

from __future__ import annotations

import strawberry

from domain.engagement.add_comment import add_comment
from domain.engagement.delete_comment import delete_comment
from domain.engagement.like_post import like_post, unlike_post
from domain.posts.errors import PostNotFoundError
from schema import visibility
from schema.context import Info
from schema.engagement.inputs import AddCommentInput, DeleteCommentInput, PostTargetInput
from schema.engagement.results import (
    AddCommentResult,
    AddCommentSuccess,
    DeleteCommentResult,
    DeleteCommentSuccess,
    LikePostResult,
    LikePostSuccess,
    UnlikePostResult,
    UnlikePostSuccess,
)
from schema.engagement.types import Comment
from schema.errors import typed_errors
from schema.ids import decode_global_id
from schema.posts.types import Post
from schema.realtime.events import publish_engagement


async def _post(info: Info, post_id) -> Post:
    """The payload's post, if the viewer may see it (schema.visibility); else NOT_FOUND,
    as for a post that does not exist."""
    (rec,) = await visibility.posts(info.context, [post_id])
    if rec is None:
        raise PostNotFoundError()
    return Post.from_record(rec)


@strawberry.type
class EngagementMutations:
    @strawberry.mutation(description="Like a post you can see. Idempotent.")
    @typed_errors
    async def like_post(self, info: Info, input: PostTargetInput) -> LikePostResult:
        ctx = info.context
        viewer = await ctx.verified_viewer("likePost")
        post_id = decode_global_id(input.post_id, "Post", "postId")
        # Read before writing: NOT_FOUND changes nothing, and a write that committed
        # is answered with its post even if it is deleted right after.
        post = await _post(info, post_id)
        if await ctx.mutate(like_post, viewer, post_id):
            await publish_engagement(ctx, post_id)
        return LikePostSuccess(post=post)

    @strawberry.mutation(description="Remove your like. Idempotent.")
    @typed_errors
    async def unlike_post(self, info: Info, input: PostTargetInput) -> UnlikePostResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        post_id = decode_global_id(input.post_id, "Post", "postId")
        # Read before writing: NOT_FOUND changes nothing, and a write that committed
        # is answered with its post even if it is deleted right after.
        post = await _post(info, post_id)
        if await ctx.mutate(unlike_post, viewer, post_id):
            await publish_engagement(ctx, post_id)
        return UnlikePostSuccess(post=post)

    @strawberry.mutation(description="Comment on a post, or reply to a top-level comment.")
    @typed_errors
    async def add_comment(self, info: Info, input: AddCommentInput) -> AddCommentResult:
        ctx = info.context
        viewer = await ctx.verified_viewer("addComment")
        post_id = decode_global_id(input.post_id, "Post", "postId")
        parent_id = (
            decode_global_id(input.parent_id, "Comment", "parentId") if input.parent_id else None
        )
        comment = await ctx.mutate(
            add_comment,
            viewer,
            post_id,
            input.body,
            parent_id=parent_id,
        )
        await publish_engagement(ctx, comment.post_id)
        # The comment committed: answered as written, even if its post went away since.
        return AddCommentSuccess(comment=Comment.from_record(comment))

    @strawberry.mutation(description="Delete a comment (yours, or any on your post).")
    @typed_errors
    async def delete_comment(self, info: Info, input: DeleteCommentInput) -> DeleteCommentResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        comment_id = decode_global_id(input.comment_id, "Comment", "commentId")
        deletion = await ctx.mutate(
            delete_comment,
            viewer,
            comment_id,
        )
        (rec,) = await visibility.posts(ctx, [deletion.post_id])
        return DeleteCommentSuccess(
            deleted_comment_id=strawberry.ID(input.comment_id),
            deleted_count=deletion.deleted,
            post=Post.from_record(rec) if rec is not None else None,
        )
