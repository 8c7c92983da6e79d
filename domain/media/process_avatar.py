"""Use case: the media worker's run of an avatar upload (docs/api/profiles.md "Avatars"); refused
bytes record why, a store failure raises (the job retries)."""

from __future__ import annotations

import asyncio
import json
import logging
import tempfile
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.media.config import raw_key
from domain.media.ports import MediaRejectedError, ProcessedMedia
from domain.media.process_post_media import (
    MediaServices,
    PostUpload,
    delivery_keys,
    media_item,
    work_prefix,
)

log = logging.getLogger("roost.media")

_CURRENT = text(
    "SELECT u.avatar_upload_id, u.status, up.state FROM users u"
    " LEFT JOIN uploads up ON up.id = :up AND up.owner_id = u.id WHERE u.id = :u"
)
_LOCK = text("SELECT avatar_upload_id, avatar FROM users WHERE id = :u FOR UPDATE")


async def process_avatar(
    engine: AsyncEngine, user_id: uuid.UUID, upload_id: uuid.UUID, media: MediaServices
) -> str:
    """Process avatar upload ``upload_id``: ``published``, ``failed`` (reason on the upload) or
    ``skipped`` (replaced or handled). Idempotent."""
    async with engine.connect() as conn:
        row = (await conn.execute(_CURRENT, {"u": user_id, "up": upload_id})).first()
    if row is None or row.avatar_upload_id != upload_id or row.state != "processing":
        await _settle(engine, upload_id, "REPLACED")
        await media.store.delete_raw(raw_key(upload_id))
        return "skipped"
    upload = PostUpload(upload_id, "image", "")
    with tempfile.TemporaryDirectory(prefix=work_prefix()) as tmp:
        try:
            processed = await _render(Path(tmp), upload, media)
        except MediaRejectedError as exc:
            log.info("avatar upload %s refused: %s (%s)", upload_id, exc.reason, exc.message)
            return await _fail(engine, upload_id, exc.reason, media)
        if await media.known_bad.matches(sha256=processed.sha256, phash=processed.phash):
            log.warning("avatar upload %s of %s refused: known-bad media", upload_id, user_id)
            return await _fail(engine, upload_id, "KNOWN_BAD_MEDIA", media)
        item, puts = media_item(user_id, upload, processed)
        await asyncio.gather(
            *(media.store.put_delivery(key, path, content_type=ct) for key, path, ct in puts)
        )
    replaced = await _publish(engine, user_id, upload_id, item)
    if replaced is None:  # replaced meanwhile: take back what was put
        await media.store.delete_delivery([k for k, _, _ in puts])
        await media.store.delete_raw(raw_key(upload_id))
        return "skipped"
    if replaced:
        await media.store.delete_delivery(delivery_keys([replaced]))
    await media.store.delete_raw(raw_key(upload_id))
    return "published"


async def _render(tmp: Path, upload: PostUpload, media: MediaServices) -> ProcessedMedia:
    source, out = tmp / "source", tmp / "out"
    out.mkdir()
    limits = media.config.limits("image")
    try:
        await media.store.download_raw(raw_key(upload.id), source, max_bytes=limits.max_bytes)
    except FileNotFoundError:
        raise MediaRejectedError("MISSING", "The uploaded file is gone; send it again.") from None
    except ValueError:
        raise MediaRejectedError("TOO_LARGE", "The file is larger than allowed.") from None
    return await asyncio.to_thread(
        media.processor.process, source, out, declared_kind="image", limits=limits, avatar=True
    )


async def _publish(
    engine: AsyncEngine, user_id: uuid.UUID, upload_id: uuid.UUID, item: dict[str, Any]
) -> dict[str, Any] | None:
    """Make ``item`` the avatar if ``upload_id`` is still chosen; return the replaced avatar ({}:
    none), or None if replaced."""
    async with engine.begin() as conn:
        row = (await conn.execute(_LOCK, {"u": user_id})).first()
        if row is None or row.avatar_upload_id != upload_id:
            return None
        await conn.execute(
            text(
                "UPDATE users SET avatar = CAST(:avatar AS jsonb), avatar_upload_id = NULL"
                " WHERE id = :u"
            ),
            {"u": user_id, "avatar": json.dumps(item)},
        )
        await conn.execute(
            text("UPDATE uploads SET state = 'attached' WHERE id = :id"), {"id": upload_id}
        )
    return dict(row.avatar or {})


async def _fail(
    engine: AsyncEngine, upload_id: uuid.UUID, reason: str, media: MediaServices
) -> str:
    await _settle(engine, upload_id, reason)
    await media.store.delete_raw(raw_key(upload_id))
    return "failed"


async def _settle(engine: AsyncEngine, upload_id: uuid.UUID, reason: str) -> None:
    """A processing avatar upload ends ``failed`` with ``reason`` (a stable code)."""
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE uploads SET state = 'failed', failure_reason = :reason"
                " WHERE id = :id AND state = 'processing'"
            ),
            {"id": upload_id, "reason": reason},
        )
