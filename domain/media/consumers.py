"""The media pipeline's outbox consumer (domain.outbox.registry ``media``)."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.media.delete_media import delete_post_media
from domain.media.process_avatar import process_avatar
from domain.media.process_post_media import MediaServices, process_post_media
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import AvatarUploaded, PostDeleted, PostMediaUploaded
from domain.outbox.process import Consumer


def media_consumer(
    engine: AsyncEngine,
    media: MediaServices,
    *,
    counter_shards: int,
    dispatcher: Dispatcher | None,
) -> Consumer:
    """``post.media_uploaded``: process and publish or fail; ``post.deleted``: delete media;
    ``avatar.uploaded``: make the avatar. Each idempotent."""

    async def uploaded(e: PostMediaUploaded, _: uuid.UUID) -> None:
        await process_post_media(
            engine, e.post_id, media, counter_shards=counter_shards, dispatcher=dispatcher
        )

    async def deleted(e: PostDeleted, _: uuid.UUID) -> None:
        await delete_post_media(engine, media.store, e.post_id)

    async def avatar(e: AvatarUploaded, _: uuid.UUID) -> None:
        await process_avatar(engine, e.user_id, e.upload_id, media)

    return {PostMediaUploaded: uploaded, PostDeleted: deleted, AvatarUploaded: avatar}
