"""Use case: delete a deleted post's media objects (the ``post.deleted`` consumer)."""

from __future__ import annotations

import asyncio
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.media.config import raw_key
from domain.media.ports import ObjectStore
from domain.media.process_post_media import delivery_keys


async def delete_post_media(engine: AsyncEngine, store: ObjectStore, post_id: uuid.UUID) -> int:
    """Delete a deleted post's objects; return the keys asked to go. Idempotent."""
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text("SELECT media, deleted_at FROM posts WHERE id = :id"), {"id": post_id}
            )
        ).first()
        uploads = [
            r[0]
            for r in await conn.execute(
                text("SELECT id FROM uploads WHERE post_id = :id"), {"id": post_id}
            )
        ]
    if row is not None and row.deleted_at is None:
        return 0
    keys = delivery_keys(row.media) if row is not None else []
    if keys:
        await store.delete_delivery(keys)
    await asyncio.gather(*(store.delete_raw(raw_key(u)) for u in uploads))
    return len(keys) + len(uploads)
