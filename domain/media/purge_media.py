"""A purge step: the account's media objects and upload rows."""

from __future__ import annotations

import asyncio
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.media.config import raw_key
from domain.media.ports import ObjectStore

_BATCH = text(
    """
    SELECT u.id, coalesce(p.media, jsonb_build_array(a.avatar)) AS media
    FROM uploads u LEFT JOIN posts p ON p.id = u.post_id
    LEFT JOIN users a ON a.id = u.owner_id AND a.avatar ->> 'uploadId' = u.id::text
    WHERE u.owner_id = :u ORDER BY u.id LIMIT :n
    """
)


async def purge_owner_media(
    engine: AsyncEngine, store: ObjectStore, owner_id: uuid.UUID, *, batch: int
) -> int:
    """Delete a batch of ``owner_id``'s uploads, objects first; return how many."""
    async with engine.connect() as conn:
        found = (await conn.execute(_BATCH, {"u": owner_id, "n": batch})).all()
    if not found:
        return 0
    ids = {str(r.id) for r in found}
    keys = [
        v["key"]
        for r in found
        for item in (r.media or ())
        if isinstance(item, dict) and item.get("uploadId") in ids
        for v in item.get("variants") or ()
        if isinstance(v, dict) and isinstance(v.get("key"), str)
    ]
    if keys:
        await store.delete_delivery(list(dict.fromkeys(keys)))
    await asyncio.gather(*(store.delete_raw(raw_key(r.id)) for r in found))
    async with engine.begin() as conn:
        await conn.execute(
            text("DELETE FROM uploads WHERE id = ANY(CAST(:ids AS uuid[]))"),
            {"ids": [r.id for r in found]},
        )
    return len(found)
