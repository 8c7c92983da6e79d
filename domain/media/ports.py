"""The media pipeline's ports. Keys are the domain's: ``raw/<upload id>`` in quarantine,
``media/<post id>/<upload id>/<variant>.<ext>`` for delivery."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

MediaKind = Literal["image", "video"]


@dataclass(frozen=True, slots=True)
class UploadTarget:
    """Where a client sends the bytes: ``method`` to ``url`` with ``headers`` (and ``fields`` for a
    POST form), until ``expires_at``."""

    url: str
    method: Literal["PUT", "POST"]
    headers: Sequence[tuple[str, str]]
    expires_at: dt.datetime
    fields: Sequence[tuple[str, str]] = ()


@dataclass(frozen=True, slots=True)
class StoredObject:
    """An object's facts as the store reports them: size in bytes, content type."""

    size: int
    content_type: str | None


class ObjectStore(Protocol):
    """Quarantine (raw uploads, private) and delivery (published variants, public)."""

    def presign_upload(
        self, key: str, *, content_type: str, byte_size: int, expires_at: dt.datetime
    ) -> UploadTarget:
        """A signed target for exactly ``byte_size`` bytes of ``content_type`` at ``key`` until
        ``expires_at``."""
        ...

    async def stat_raw(self, key: str) -> StoredObject | None:
        """The quarantined object at ``key``, or None when no bytes arrived."""
        ...

    async def download_raw(self, key: str, dest: Path, *, max_bytes: int) -> int:
        """Stream the object to ``dest``; return its size. Raises FileNotFoundError if gone,
        ValueError over ``max_bytes``."""
        ...

    async def delete_raw(self, key: str) -> None:
        """Delete a quarantined object; a missing one is no error."""
        ...

    async def put_delivery(self, key: str, source: Path, *, content_type: str) -> None:
        """Publish the local file ``source`` at delivery ``key`` (immutable afterwards)."""
        ...

    async def delete_delivery(self, keys: Sequence[str]) -> None:
        """Delete delivered objects; missing ones are no error."""
        ...

    def public_url(self, key: str) -> str:
        """The URL a client fetches delivery ``key`` from (under MEDIA_PUBLIC_BASE_URL)."""
        ...


@dataclass(frozen=True, slots=True)
class MediaLimits:
    """Source bytes, decoded pixels, longest side, video seconds."""

    max_bytes: int
    max_pixels: int
    max_side: int
    max_video_seconds: float


@dataclass(frozen=True, slots=True)
class Variant:
    """One rendition: ``name`` (``thumbnail``, ``feed``, ``full``, ``720p``…), file, MIME type,
    pixel size."""

    name: str
    path: Path
    mime_type: str
    width: int
    height: int


@dataclass(frozen=True, slots=True)
class ProcessedMedia:
    """What the processor found: kind and MIME type by the bytes, size after EXIF orientation,
    BlurHash, duration (s), SHA-256 and 64-bit perceptual hash (hex), stripped variants."""

    kind: MediaKind
    mime_type: str
    width: int
    height: int
    blurhash: str
    sha256: str
    phash: str
    variants: Sequence[Variant]
    duration_s: float | None = None
    extra: dict[str, str] = field(default_factory=dict)


class MediaRejectedError(Exception):
    """Not publishable (final): ``reason`` a stable code (docs/api/media.md "Media"), ``message``
    for the author."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class MediaProcessor(Protocol):
    """Decodes a source and writes variants (blocking: run off the event loop)."""

    def process(
        self,
        source: Path,
        out_dir: Path,
        *,
        declared_kind: MediaKind,
        limits: MediaLimits,
        avatar: bool = False,
    ) -> ProcessedMedia:
        """Check ``limits`` and write the variants to ``out_dir`` (``avatar``: square avatar
        variants). Raises MediaRejectedError."""
        ...


class KnownBadMedia(Protocol):
    """The hash list checked before anything is published."""

    async def matches(self, *, sha256: str, phash: str) -> bool:
        """Whether the source is listed (exact SHA-256, or phash within the list's distance)."""
        ...
