"""Use case: reserve a direct upload (phase one of a post with media)."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import new_id, utcnow
from domain.errors import ValidationError
from domain.identity.errors import AccountUnavailableError
from domain.media.config import CONTENT_TYPES, MediaConfig, raw_key
from domain.media.ports import ObjectStore, UploadTarget
from domain.text import clean_text
from domain.visibility.predicates import is_active

_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class ReservedUpload:
    """An upload reserved for its owner: its id and where to send the bytes."""

    id: uuid.UUID
    target: UploadTarget


_NOUN = {"image": "an image", "video": "a video"}


def check_upload(
    config: MediaConfig, kind: str, content_type: str, byte_size: int, sha256: str | None
) -> tuple[str, str, str | None]:
    """(kind, content type, sha256) normalised; raises ValidationError for a bad kind, type, size or
    SHA-256."""
    kind = kind.lower()
    if kind not in CONTENT_TYPES:
        raise ValidationError("kind", "Media kind must be IMAGE or VIDEO.")
    content_type = content_type.strip().lower()
    if content_type not in CONTENT_TYPES[kind]:
        allowed = ", ".join(CONTENT_TYPES[kind])
        raise ValidationError(
            "contentType", f"The content type of {_NOUN[kind]} upload is one of: {allowed}."
        )
    limit = config.max_bytes(kind)
    if byte_size < 1 or byte_size > limit:
        raise ValidationError(
            "byteSize", f"byteSize must be between 1 and {limit} bytes for {_NOUN[kind]}."
        )
    if sha256 is not None:
        sha256 = sha256.strip().lower()
        if not _SHA256.fullmatch(sha256):
            raise ValidationError("sha256", "sha256 is 64 hexadecimal digits.")
    return kind, content_type, sha256


async def create_upload(
    engine: AsyncEngine,
    owner_id: uuid.UUID,
    *,
    kind: str,
    content_type: str,
    byte_size: int,
    sha256: str | None = None,
    alt_text: str = "",
    store: ObjectStore,
    config: MediaConfig,
    now: dt.datetime | None = None,
) -> ReservedUpload:
    """Reserve an upload; return the signed target for exactly those bytes at ``raw/<id>``. Raises
    ValidationError or AccountUnavailableError."""
    kind, content_type, sha256 = check_upload(config, kind, content_type, byte_size, sha256)
    alt_text = clean_text("altText", alt_text, max_len=config.alt_text_max).strip()
    upload_id = new_id()
    expires_at = (now or utcnow()) + config.upload_ttl
    async with engine.begin() as conn:
        inserted = await conn.scalar(
            text(
                "INSERT INTO uploads"
                " (id, owner_id, kind, content_type, byte_size, sha256, alt_text, expires_at)"
                " SELECT :id, id, :kind, :ct, :size, :sha, :alt, :exp FROM users"
                f" WHERE id = :owner AND {is_active()} RETURNING id"
            ),
            {
                "id": upload_id,
                "owner": owner_id,
                "kind": kind,
                "ct": content_type,
                "size": byte_size,
                "sha": sha256,
                "alt": alt_text,
                "exp": expires_at,
            },
        )
        if inserted is None:
            raise AccountUnavailableError()
    target = store.presign_upload(
        raw_key(upload_id), content_type=content_type, byte_size=byte_size, expires_at=expires_at
    )
    return ReservedUpload(upload_id, target)
