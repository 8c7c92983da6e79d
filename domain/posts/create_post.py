"""Use case: publish a post (its fan-out runs after the commit, in the worker)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import Delta, add_deltas
from domain.db import new_id
from domain.engagement.hashtags import tag_post
from domain.errors import ValidationError
from domain.identity.errors import AccountUnavailableError
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import PostCreated
from domain.outbox.unit_of_work import unit_of_work
from domain.posts.queries import PostRecord, to_post
from domain.text import CAPTION_MAX, clean_text

MEDIA_MAX = 10
MEDIA_KINDS = ("image", "video")
URL_MAX = 2048


@dataclass(frozen=True)
class MediaItem:
    """One attached media file: an http(s) URL and its kind (``image`` or ``video``)."""

    url: str
    kind: str


def clean_media(media: Sequence[MediaItem]) -> list[dict[str, str]]:
    """Return the media as JSON-ready dicts; raise ValidationError("media") on more than
    10 items, an unknown kind, or a URL that is not absolute http(s) of at most 2,048
    characters."""
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
        out.append({"url": url, "kind": kind})
    return out


async def create_post(
    engine: AsyncEngine,
    author_id: uuid.UUID,
    *,
    caption: str,
    media: Sequence[MediaItem] = (),
    counter_shards: int,
    dispatcher: Dispatcher | None = None,
) -> PostRecord:
    """Publish a post and return it.

    One transaction: the post row, its hashtags, the author's ``posts`` counter (+1)
    and a ``post.created`` outbox row; then the event is dispatched to the fan-out worker
    (the outbox relay re-drives it if that fails). Raises AccountUnavailableError when
    the author is banned or deleted, ValidationError for a
    caption over 2,200 code points after NFC, a NUL, bad media, or a post with
    neither caption nor media.
    """
    caption = clean_text("caption", caption, max_len=CAPTION_MAX)
    items = clean_media(media)
    if not caption.strip() and not items:
        raise ValidationError("caption", "A post needs a caption or media.")
    post_id = new_id()
    async with unit_of_work(engine, dispatcher) as uow:
        conn = uow.conn
        row = (
            await conn.execute(
                text(
                    "INSERT INTO posts (id, author_id, caption, media)"
                    " SELECT :id, id, :caption, CAST(:media AS jsonb) FROM users"
                    " WHERE id = :author AND status = 'active'"
                    " RETURNING id, author_id, caption, media, created_at, deleted_at"
                ),
                {
                    "id": post_id,
                    "author": author_id,
                    "caption": caption,
                    "media": json.dumps(items),
                },
            )
        ).first()
        if row is None:
            raise AccountUnavailableError()
        post = to_post(row)
        await tag_post(conn, post.id, post.created_at, caption)
        await uow.append(PostCreated(post.id, author_id))
        await add_deltas(conn, [Delta(author_id, "posts", 1)], shards=counter_shards)
    return post
