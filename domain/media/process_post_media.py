"""Use case: the media worker's run of a PROCESSING post (docs/api/media.md "Media"), each step safe
to rerun. The post is published only if still PROCESSING. Refused bytes fail it, a known-bad match
removes it, a store failure raises (the job retries)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import Delta, add_deltas
from domain.media.config import MediaConfig, delivery_key, raw_key
from domain.media.ports import (
    KnownBadMedia,
    MediaKind,
    MediaProcessor,
    MediaRejectedError,
    ObjectStore,
    ProcessedMedia,
)
from domain.moderation.reports import file_system_report
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import PostCreated, PostProcessed, ReportFiled
from domain.outbox.unit_of_work import unit_of_work
from domain.visibility.predicates import is_live

log = logging.getLogger("roost.media")

_EXTENSIONS = {
    "image/jpeg": "jpg",
    "image/png": "png",
    "image/webp": "webp",
    "image/avif": "avif",
    "image/gif": "gif",
    "video/mp4": "mp4",
    "video/webm": "webm",
}


@dataclass(frozen=True, slots=True)
class PostUpload:
    """One upload of a post, in its order."""

    id: uuid.UUID
    kind: MediaKind
    alt_text: str


@dataclass(frozen=True)
class MediaServices:
    """The object store, processor, known-bad list and knobs."""

    store: ObjectStore
    processor: MediaProcessor
    known_bad: KnownBadMedia
    config: MediaConfig


#: Temporary folders are ``roost-media-<pid>-…``, so a starting worker sweeps dead processes'.
WORK_PREFIX = "roost-media-"


def work_prefix() -> str:
    """The prefix of this process's temporary folders."""
    return f"{WORK_PREFIX}{os.getpid()}-"


def sweep_work_dirs(root: Path | None = None) -> int:
    """Delete temporary folders of media runs of dead processes; return how many."""
    base = Path(root or tempfile.gettempdir())
    swept = 0
    for folder in base.glob(f"{WORK_PREFIX}*-*"):
        pid = folder.name[len(WORK_PREFIX) :].split("-", 1)[0]
        if not pid.isdigit() or not folder.is_dir() or _alive(int(pid)):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        swept += 1
    return swept


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_POST = text("SELECT author_id, state, deleted_at FROM posts WHERE id = :id")
_LOCK_POST = text("SELECT author_id, state, deleted_at FROM posts WHERE id = :id FOR UPDATE")
_UPLOADS = text("SELECT id, kind, alt_text FROM uploads WHERE post_id = :id ORDER BY position, id")


async def post_uploads(engine: AsyncEngine, post_id: uuid.UUID) -> list[PostUpload]:
    """The uploads attached to ``post_id``, in the post's order."""
    async with engine.connect() as conn:
        rows = (await conn.execute(_UPLOADS, {"id": post_id})).all()
    return [PostUpload(r.id, r.kind, r.alt_text) for r in rows]


async def delete_raws(store: ObjectStore, uploads: Sequence[PostUpload]) -> None:
    """Delete the uploads' raw objects (missing ones are no error)."""
    await asyncio.gather(*(store.delete_raw(raw_key(u.id)) for u in uploads))


def media_item(
    post_id: uuid.UUID, upload: PostUpload, processed: ProcessedMedia
) -> tuple[dict[str, Any], list[tuple[str, Path, str]]]:
    """The ``posts.media`` entry of a processed upload, and (key, file, MIME type) per variant."""
    variants = []
    puts = []
    for v in processed.variants:
        ext = _EXTENSIONS.get(v.mime_type) or v.path.suffix.lstrip(".") or "bin"
        key = delivery_key(post_id, upload.id, v.name, ext)
        variants.append(
            {
                "name": v.name,
                "key": key,
                "mimeType": v.mime_type,
                "width": v.width,
                "height": v.height,
            }
        )
        puts.append((key, v.path, v.mime_type))
    item: dict[str, Any] = {
        "kind": processed.kind,
        "uploadId": str(upload.id),
        "mimeType": processed.mime_type,
        "width": processed.width,
        "height": processed.height,
        "blurhash": processed.blurhash,
        "variants": variants,
    }
    if upload.alt_text:
        item["altText"] = upload.alt_text
    if processed.duration_s is not None:
        item["durationSeconds"] = processed.duration_s
    return item, puts


def delivery_keys(media: Sequence[dict[str, Any]]) -> list[str]:
    """Every delivery key a post's stored media name."""
    return [
        v["key"]
        for item in media
        for v in item.get("variants") or ()
        if isinstance(v, dict) and isinstance(v.get("key"), str)
    ]


async def process_post_media(
    engine: AsyncEngine,
    post_id: uuid.UUID,
    media: MediaServices,
    *,
    counter_shards: int,
    dispatcher: Dispatcher | None = None,
) -> str:
    """Process and publish PROCESSING post ``post_id``: ``published``, ``failed``, ``removed`` or
    ``skipped``. Raises on transient errors."""
    async with engine.connect() as conn:
        post = (await conn.execute(_POST, {"id": post_id})).first()
    uploads = await post_uploads(engine, post_id)
    if post is None or post.deleted_at is not None or post.state != "processing":
        if post is None or post.state != "removed":  # a removed post's raws stay for review
            await delete_raws(media.store, uploads)
        return "skipped"
    if not uploads:
        return await _fail(
            engine, post_id, [], ("MISSING", "The post's files are gone."), media, dispatcher
        )
    with tempfile.TemporaryDirectory(prefix=work_prefix()) as tmp:
        try:
            done = [await _one(Path(tmp), i, u, media) for i, u in enumerate(uploads)]
        except MediaRejectedError as exc:
            why = (exc.reason, exc.message)
            return await _fail(engine, post_id, uploads, why, media, dispatcher)
        for processed in done:
            if await media.known_bad.matches(sha256=processed.sha256, phash=processed.phash):
                return await _remove(engine, post_id, uploads, dispatcher)
        items = []
        puts: list[tuple[str, Path, str]] = []
        for upload, processed in zip(uploads, done, strict=True):
            item, its_puts = media_item(post_id, upload, processed)
            items.append(item)
            puts += its_puts
        await asyncio.gather(
            *(media.store.put_delivery(key, path, content_type=ct) for key, path, ct in puts)
        )
    published = await _publish(
        engine, post_id, items, counter_shards=counter_shards, dispatcher=dispatcher
    )
    if not published:  # deleted (or finished elsewhere) meanwhile: take back what was put
        if not await _is_published(engine, post_id):
            await media.store.delete_delivery([k for k, _, _ in puts])
        await delete_raws(media.store, uploads)
        return "skipped"
    await delete_raws(media.store, uploads)
    return "published"


async def _one(tmp: Path, i: int, upload: PostUpload, media: MediaServices) -> ProcessedMedia:
    source = tmp / f"source-{i}"
    out = tmp / f"out-{i}"
    out.mkdir()
    limits = media.config.limits(upload.kind)
    try:
        await media.store.download_raw(raw_key(upload.id), source, max_bytes=limits.max_bytes)
    except FileNotFoundError:
        raise MediaRejectedError("MISSING", "The uploaded file is gone; post it again.") from None
    except ValueError:
        raise MediaRejectedError("TOO_LARGE", "The file is larger than allowed.") from None
    return await asyncio.to_thread(
        media.processor.process, source, out, declared_kind=upload.kind, limits=limits
    )


async def _is_published(engine: AsyncEngine, post_id: uuid.UUID) -> bool:
    async with engine.connect() as conn:
        state = await conn.scalar(
            text(f"SELECT state FROM posts WHERE id = :id AND {is_live()}"), {"id": post_id}
        )
    return bool(state == "published")


async def _publish(
    engine: AsyncEngine,
    post_id: uuid.UUID,
    items: list[dict[str, Any]],
    *,
    counter_shards: int,
    dispatcher: Dispatcher | None,
) -> bool:
    async with unit_of_work(engine, dispatcher) as uow:
        conn = uow.conn
        post = (await conn.execute(_LOCK_POST, {"id": post_id})).first()
        if post is None or post.deleted_at is not None or post.state != "processing":
            return False
        await conn.execute(
            text(
                "UPDATE posts SET state = 'published', media = CAST(:media AS jsonb),"
                " published_at = now(), failure_reason = NULL WHERE id = :id"
            ),
            {"id": post_id, "media": json.dumps(items)},
        )
        await add_deltas(conn, [Delta(post.author_id, "posts", 1)], shards=counter_shards)
        await uow.record(PostCreated(post_id, post.author_id))
        await uow.record(PostProcessed(post_id, post.author_id, "published"))
    return True


async def _fail(
    engine: AsyncEngine,
    post_id: uuid.UUID,
    uploads: Sequence[PostUpload],
    why: tuple[str, str],
    media: MediaServices,
    dispatcher: Dispatcher | None,
) -> str:
    reason, message = why
    async with unit_of_work(engine, dispatcher) as uow:
        conn = uow.conn
        post = (await conn.execute(_LOCK_POST, {"id": post_id})).first()
        if post is None or post.deleted_at is not None or post.state != "processing":
            return "skipped"
        await conn.execute(
            text("UPDATE posts SET state = 'failed', failure_reason = :msg WHERE id = :id"),
            {"id": post_id, "msg": message},
        )
        await conn.execute(
            text(
                "UPDATE uploads SET state = 'failed', failure_reason = :reason WHERE post_id = :id"
            ),
            {"id": post_id, "reason": reason},
        )
        await uow.record(PostProcessed(post_id, post.author_id, "failed", reason))
    log.info("post %s failed: %s (%s)", post_id, reason, message)
    await delete_raws(media.store, uploads)
    return "failed"


async def _remove(
    engine: AsyncEngine,
    post_id: uuid.UUID,
    uploads: Sequence[PostUpload],
    dispatcher: Dispatcher | None,
) -> str:
    async with unit_of_work(engine, dispatcher) as uow:
        conn = uow.conn
        post = (await conn.execute(_LOCK_POST, {"id": post_id})).first()
        if post is None or post.deleted_at is not None or post.state != "processing":
            return "skipped"
        await conn.execute(
            text(
                "UPDATE posts SET state = 'removed', deleted_at = now(),"
                " failure_reason = 'KNOWN_BAD_MEDIA' WHERE id = :id"
            ),
            {"id": post_id},
        )
        await conn.execute(
            text(
                "UPDATE uploads SET state = 'failed', failure_reason = 'KNOWN_BAD_MEDIA'"
                " WHERE post_id = :id"
            ),
            {"id": post_id},
        )
        report_id = await file_system_report(
            conn,
            user_id=post.author_id,
            post_id=post_id,
            reason="known_bad_media",
            note=f"{len(uploads)} file(s) checked; a match on the known-bad list.",
        )
        await uow.record(ReportFiled(report_id, "post"))
    log.warning("post %s removed: known-bad media", post_id)
    return "removed"
