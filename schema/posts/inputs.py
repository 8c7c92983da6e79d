"""Inputs of the createPost, editPost and deletePost mutations."""

from __future__ import annotations

import strawberry

from schema.media.types import MediaKind


@strawberry.input(
    description="An external media file: an https URL on one of the server's allowed hosts "
    "(MEDIA_URL_ALLOWED_HOSTS, none by default), its kind and alt text. Upload files "
    "instead (createMediaUpload, then `uploadIds`)."
)
class MediaInput:
    url: str
    kind: MediaKind
    alt_text: str = strawberry.field(
        default="", description="Up to 1,000 Unicode code points (after NFC)."
    )


@strawberry.input
class CreatePostInput:
    caption: str = strawberry.field(
        default="",
        description=(
            "Up to 2,200 Unicode code points (after NFC; an emoji with a skin tone is 2,"
            " a family emoji up to 7)."
        ),
    )
    upload_ids: list[strawberry.ID] = strawberry.field(
        default_factory=list,
        description="Up to 10 of your uploads (createMediaUpload), their bytes sent, in "
        "order: the post is PROCESSING until they are processed, then PUBLISHED.",
    )
    media: list[MediaInput] = strawberry.field(
        default_factory=list, description="External media (at most 10; not with uploadIds)."
    )


@strawberry.input
class EditPostInput:
    post_id: strawberry.ID = strawberry.field(description="A Post global id (one of yours).")
    caption: str = strawberry.field(
        description="The new caption: up to 2,200 Unicode code points (after NFC); empty "
        "only on a post with media."
    )


@strawberry.input
class DeletePostInput:
    post_id: strawberry.ID = strawberry.field(description="A Post global id.")
