"""Post mutations: createPost, editPost, deletePost."""

from __future__ import annotations

import strawberry

from domain.errors import ValidationError
from domain.media.config import MediaConfig
from domain.posts.create_post import MEDIA_MAX, MediaItem, create_post
from domain.posts.delete_post import delete_post
from domain.posts.edit_post import edit_post
from schema.context import Info
from schema.errors import typed_errors
from schema.ids import decode_global_id
from schema.posts.inputs import CreatePostInput, DeletePostInput, EditPostInput
from schema.posts.results import (
    CreatePostResult,
    CreatePostSuccess,
    DeletePostResult,
    DeletePostSuccess,
    EditPostResult,
    EditPostSuccess,
)
from schema.posts.types import Post

MAX_IDS = MEDIA_MAX
_NO_MEDIA = MediaConfig()


@strawberry.type
class PostMutations:
    @strawberry.mutation(
        description="Create a post: published at once, or with `uploadIds` PROCESSING until "
        "its media are processed (then PUBLISHED, and it reaches your followers' feeds)."
    )
    @typed_errors
    async def create_post(self, info: Info, input: CreatePostInput) -> CreatePostResult:
        ctx = info.context
        viewer = await ctx.verified_viewer("createPost")
        media = ctx.media
        if len(input.upload_ids) > MAX_IDS:
            raise ValidationError("uploadIds", f"A post has at most {MAX_IDS} media items.")
        upload_ids = [decode_global_id(u, "MediaUpload", "uploadIds") for u in input.upload_ids]
        post = await ctx.mutate(
            create_post,
            viewer,
            caption=input.caption,
            media=[MediaItem(m.url, m.kind.value, m.alt_text) for m in input.media],
            upload_ids=upload_ids,
            store=media.store if media is not None else None,
            media_config=media.config if media is not None else _NO_MEDIA,
        )
        return CreatePostSuccess(post=Post.from_record(post))

    @strawberry.mutation(
        description="Edit the caption of one of your posts, until POST_EDIT_WINDOW_S after "
        "its creation: hashtags and mentions follow the new caption (only people it newly "
        "mentions are notified), the old caption goes into `editHistory`, and the post "
        "stays where it was in every feed."
    )
    @typed_errors
    async def edit_post(self, info: Info, input: EditPostInput) -> EditPostResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        post_id = decode_global_id(input.post_id, "Post", "postId")
        post = await ctx.mutate(
            edit_post,
            viewer,
            post_id,
            input.caption,
            window_s=ctx.limits.post_edit_window_s,
        )
        return EditPostSuccess(post=Post.from_record(post))

    @strawberry.mutation(description="Delete one of your posts. Idempotent.")
    @typed_errors
    async def delete_post(self, info: Info, input: DeletePostInput) -> DeletePostResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        post_id = decode_global_id(input.post_id, "Post", "postId")
        await ctx.mutate(
            delete_post,
            viewer,
            post_id,
        )
        return DeletePostSuccess(deleted_post_id=strawberry.ID(input.post_id))
