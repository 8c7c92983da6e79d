"""The createMediaUpload input."""

from __future__ import annotations

import strawberry

from schema.media.types import MediaKind


@strawberry.input
class CreateMediaUploadInput:
    kind: MediaKind
    content_type: str = strawberry.field(
        description="image/jpeg, image/png, image/webp, image/heic or image/heif for an "
        "IMAGE; video/mp4 or video/quicktime for a VIDEO. The worker decides by the bytes."
    )
    byte_size: int = strawberry.field(
        description="The file's exact size in bytes (MEDIA_MAX_IMAGE_BYTES, "
        "MEDIA_MAX_VIDEO_BYTES at most); storage refuses any other size."
    )
    sha256: str | None = strawberry.field(
        default=None, description="The file's SHA-256, 64 hex digits (optional)."
    )
    alt_text: str = strawberry.field(
        default="",
        description="What the image shows, for screen readers (1,000 Unicode code points).",
    )
