"""Media mutations: createMediaUpload."""

from __future__ import annotations

import strawberry
from graphql import GraphQLError

from domain.media.create_upload import create_upload
from schema.context import Info, MediaAccess
from schema.errors import typed_errors
from schema.media.inputs import CreateMediaUploadInput
from schema.media.results import CreateMediaUploadResult, CreateMediaUploadSuccess
from schema.media.types import MediaUpload


def media_access(info: Info) -> MediaAccess:
    """The object store and knobs, or a ``SERVICE_UNAVAILABLE`` error without a store."""
    media = info.context.media
    if media is None:
        raise GraphQLError(
            "This server has no media storage.", extensions={"code": "SERVICE_UNAVAILABLE"}
        )
    return media


@strawberry.type
class MediaMutations:
    @strawberry.mutation(
        description="Reserve an upload (valid 15 minutes): send the file's bytes where and "
        "how `upload` says, then create the post with its id in `uploadIds`."
    )
    @typed_errors
    async def create_media_upload(
        self, info: Info, input: CreateMediaUploadInput
    ) -> CreateMediaUploadResult:
        ctx = info.context
        viewer = await ctx.verified_viewer("createMediaUpload")
        media = media_access(info)
        reserved = await ctx.mutate(
            create_upload,
            viewer,
            kind=input.kind.value,
            content_type=input.content_type,
            byte_size=input.byte_size,
            sha256=input.sha256,
            alt_text=input.alt_text,
            store=media.store,
            config=media.config,
        )
        return CreateMediaUploadSuccess(upload=MediaUpload.of(reserved.id, reserved.target))
