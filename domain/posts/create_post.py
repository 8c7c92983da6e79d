"""Use case: create a post, published at once, or with uploads PROCESSING until the media worker
finishes it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import Delta, add_deltas
from domain.db import new_id, utcnow
from domain.engagement.hashtags import tag_post
from domain.errors import ValidationError
from domain.identity.errors import AccountUnavailableError
from domain.media.config import MediaConfig
from domain.media.errors import MediaUrlNotAllowedError, UploadUnusableError
from domain.media.ports import ObjectStore
from domain.media.uploads import check_arrived, check_uploads, read_uploads
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import PostCreated, PostMediaUploaded
from domain.outbox.unit_of_work import unit_of_work
from domain.posts.queries import POST_COLUMNS, PostRecord, to_post
from domain.text import CAPTION_MAX, clean_text
from domain.visibility.predicates import is_active

MEDIA_MAX = 10
MEDIA_KINDS = ("image", "video")
URL_MAX = 2048
_DEFAULT_MEDIA = MediaConfig()


@dataclass(frozen=True)
class MediaItem:
    """One external media file: an allowed https URL, ``image`` or ``video``, alt text."""

    url: str
    kind: str
    alt_text: str = ""


def clean_media(
    media: Sequence[MediaItem], config: MediaConfig = _DEFAULT_MEDIA
) -> list[dict[str, str]]:
    """The media as dicts; raises ValidationError("media") or MediaUrlNotAllowedError."""
    if len(media) > MEDIA_MAX:
        raise ValidationError("media", f"A post has at most {MEDIA_MAX} media items.")
    out = []
    for item in media:
        kind = item.kind.lower()
        if kind not in MEDIA_KINDS:
            raise ValidationError("media", f"Media kind must be one of {', '.join(MEDIA_KINDS)}.")
        url = item.url.strip()
        parts = urlsplit(url) if len(url) <= URL_MAX and "\x00" not in url else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValidationError("media", "Media URLs must be absolute http(s) URLs.")
        host = (parts.hostname or "").lower()
        if (
            parts.scheme != "https"
            or parts.username is not None
            or parts.password is not None
            or host not in config.url_allowed_hosts
        ):
            raise MediaUrlNotAllowedError(url)
        alt = clean_text("altText", item.alt_text, max_len=config.alt_text_max).strip()
        entry = {"url": url, "kind": kind}
        if alt:
            entry["altText"] = alt
        out.append(entry)
    return out


def _check_upload_ids(upload_ids: Sequence[uuid.UUID], n_urls: int) -> list[uuid.UUID]:
    ids = list(upload_ids)
    if len(ids) + n_urls > MEDIA_MAX:
        raise ValidationError("uploadIds", f"A post has at most {MEDIA_MAX} media items.")
    if ids and n_urls:
        raise ValidationError("media", "A post takes uploads or external media URLs, not both.")
    seen: set[uuid.UUID] = set()
    for i, upload_id in enumerate(ids):
        if upload_id in seen:
            raise UploadUnusableError(upload_id, "USED", "The same upload is named twice.", index=i)
        seen.add(upload_id)
    return ids


async def create_post(
    engine: AsyncEngine,
    author_id: uuid.UUID,
    *,
    caption: str,
    media: Sequence[MediaItem] = (),
    upload_ids: Sequence[uuid.UUID] = (),
    counter_shards: int,
    dispatcher: Dispatcher | None = None,
    store: ObjectStore | None = None,
    media_config: MediaConfig = _DEFAULT_MEDIA,
) -> PostRecord:
    """Create a post: published (counter, ``post.created``), or with ``upload_ids`` (≤ 10 pending)
    PROCESSING with ``post.media_uploaded``. Raises AccountUnavailableError, ValidationError,
    MediaUrlNotAllowedError, UploadNotFoundError or UploadUnusableError."""
    caption = clean_text("caption", caption, max_len=CAPTION_MAX)
    items = clean_media(media, media_config)
    ids = _check_upload_ids(upload_ids, len(items))
    if not caption.strip() and not items and not ids:
        raise ValidationError("caption", "A post needs a caption or media.")
    if ids:
        if store is None:
            raise ValidationError("uploadIds", "This server takes no uploads.")
        async with engine.connect() as conn:
            rows = await read_uploads(conn, ids, author_id, lock=False)
        check_uploads(ids, rows, utcnow())
        await check_arrived(store, ids, rows)
    post_id = new_id()
    async with unit_of_work(engine, dispatcher) as uow:
        conn = uow.conn
        if ids:  # again, locked: a concurrent createPost with the same upload waits here
            check_uploads(ids, await read_uploads(conn, ids, author_id, lock=True), utcnow())
        row = (
            await conn.execute(
                text(
                    "INSERT INTO posts (id, author_id, caption, media, state, published_at)"
                    " SELECT :id, id, :caption, CAST(:media AS jsonb), :state,"
                    " CASE WHEN :state = 'published' THEN now() END FROM users"
                    f" WHERE id = :author AND {is_active()}"
                    f" RETURNING {POST_COLUMNS}"
                ),
                {
                    "id": post_id,
                    "author": author_id,
                    "caption": caption,
                    "media": json.dumps(items),
                    "state": "processing" if ids else "published",
                },
            )
        ).first()
        if row is None:
            raise AccountUnavailableError()
        post = to_post(row)
        await tag_post(conn, post.id, post.created_at, caption)
        if ids:
            await conn.execute(
                text(
                    "UPDATE uploads u SET state = 'attached', post_id = :post, position = o.n"
                    " FROM unnest(CAST(:ids AS uuid[])) WITH ORDINALITY AS o(id, n)"
                    " WHERE u.id = o.id"
                ),
                {"post": post_id, "ids": ids},
            )
            await uow.record(PostMediaUploaded(post.id, author_id))
        else:
            await uow.record(PostCreated(post.id, author_id))
            await add_deltas(conn, [Delta(author_id, "posts", 1)], shards=counter_shards)
    return post
