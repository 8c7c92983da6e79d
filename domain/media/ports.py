"""The ports of the media pipeline: object storage, decoding and the known-bad list.
Keys are chosen by the domain, never by a client: ``raw/<upload id>`` in quarantine,
``media/<post id>/<upload id>/<variant>.<ext>`` for delivery.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

MediaKind = Literal["image", "video"]


@dataclass(frozen=True, slots=True)
class UploadTarget:
    """Where and how a client sends an upload's bytes: ``method`` (PUT or POST) to
    ``url`` with ``headers`` (and, for a POST form, ``fields`` before the file), until
    ``expires_at``."""

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
        """A signed target that accepts exactly ``byte_size`` bytes of ``content_type``
        at quarantine ``key`` until ``expires_at``; nothing is written yet."""
        ...

    async def stat_raw(self, key: str) -> StoredObject | None:
        """The quarantined object at ``key``, or None when no bytes arrived."""
        ...

    async def download_raw(self, key: str, dest: Path, *, max_bytes: int) -> int:
        """Stream the quarantined object to the local file ``dest`` (never whole in
        memory); return its size. Raises FileNotFoundError when it is gone and
        ValueError when it is larger than ``max_bytes``."""
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
    """What the worker accepts: bytes of the source, decoded pixels (width × height),
    the longest side in pixels, seconds of video."""

    max_bytes: int
    max_pixels: int
    max_side: int
    max_video_seconds: float


@dataclass(frozen=True, slots=True)
class Variant:
    """One rendition written by the processor: ``name`` (``thumbnail``, ``feed``,
    ``full``, ``poster``, ``preview``, ``720p``, ``1080p``, …), a local file, its MIME
    type and pixel size."""

    name: str
    path: Path
    mime_type: str
    width: int
    height: int


@dataclass(frozen=True, slots=True)
class ProcessedMedia:
    """What the processor found and made: the kind and MIME type decided from the bytes,
    pixel size after EXIF orientation, a BlurHash, video duration in seconds, the
    source's SHA-256 (hex) and a 64-bit perceptual hash (hex) of the image or poster
    frame, and the variants (every one stripped of metadata)."""

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
    """The source is not media Roost publishes (final): ``reason`` a stable code
    (docs/api/media.md "Media"), ``message`` what the author reads."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class MediaProcessor(Protocol):
    """Decodes a source file and writes its variants (CPU-bound and blocking: the
    caller runs it off the event loop)."""

    def process(
        self,
        source: Path,
        out_dir: Path,
        *,
        declared_kind: MediaKind,
        limits: MediaLimits,
        avatar: bool = False,
    ) -> ProcessedMedia:
        """Decide the type by the bytes, check ``limits``, and write the variants into
        ``out_dir`` (``avatar``: a photo's square avatar variants instead of a post's).
        Raises MediaRejectedError."""
        ...


class KnownBadMedia(Protocol):
    """The hash list checked before anything is published."""

    async def matches(self, *, sha256: str, phash: str) -> bool:
        """Whether the source is on the list (exact SHA-256, or a perceptual hash within
        the list's Hamming distance)."""
        ...
