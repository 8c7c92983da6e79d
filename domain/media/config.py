"""The media pipeline's knobs (docs/api/media.md "Media"; set from app/settings.py)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from domain.media.ports import MediaKind, MediaLimits

#: The content types an upload may declare, by kind (the worker decides by the bytes).
CONTENT_TYPES: dict[str, tuple[str, ...]] = {
    "image": ("image/jpeg", "image/png", "image/webp", "image/heic", "image/heif"),
    "video": ("video/mp4", "video/quicktime"),
}


@dataclass(frozen=True)
class MediaConfig:
    """Media limits: ``upload_ttl`` of a target, ``pending_ttl`` before an unused upload expires,
    ``max_*`` sizes and decode limits, ``url_allowed_hosts`` for external URLs (none: uploads only),
    ``alt_text_max`` code points, ``cleanup_batch``."""

    upload_ttl: dt.timedelta = dt.timedelta(minutes=15)
    pending_ttl: dt.timedelta = dt.timedelta(hours=1)
    max_image_bytes: int = 30 * 1024 * 1024
    max_video_bytes: int = 200 * 1024 * 1024
    max_pixels: int = 50_000_000
    max_side: int = 12_000
    max_video_seconds: float = 60.0
    url_allowed_hosts: frozenset[str] = frozenset()
    alt_text_max: int = 1_000
    cleanup_batch: int = 200

    def max_bytes(self, kind: str) -> int:
        """The largest accepted size of an upload of ``kind``, in bytes."""
        return self.max_video_bytes if kind == "video" else self.max_image_bytes

    def limits(self, kind: MediaKind) -> MediaLimits:
        """What the processor accepts for a source of ``kind``."""
        return MediaLimits(
            max_bytes=self.max_bytes(kind),
            max_pixels=self.max_pixels,
            max_side=self.max_side,
            max_video_seconds=self.max_video_seconds,
        )


def raw_key(upload_id: object) -> str:
    """The quarantine key of an upload's raw bytes."""
    return f"raw/{upload_id}"


def delivery_key(owner_id: object, upload_id: object, variant: str, ext: str) -> str:
    """The delivery key of a variant of a post's media or an avatar (``owner_id``)."""
    return f"media/{owner_id}/{upload_id}/{variant}.{ext}"
