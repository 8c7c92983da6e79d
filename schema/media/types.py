"""``MediaUpload``, ``Media`` and its variants, ``PostState``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any, Self

import strawberry

from domain.media.ports import UploadTarget
from schema.ids import to_global_id


@strawberry.enum
class MediaKind(Enum):
    IMAGE = "image"
    VIDEO = "video"


@strawberry.enum(
    description="Where a post is: PROCESSING (its media are being processed; only you, "
    "its author, see it), PUBLISHED (everyone who may see your posts does), FAILED (it "
    "could not be published: `failureReason` says why; only you see it)."
)
class PostState(Enum):
    PROCESSING = "processing"
    PUBLISHED = "published"
    FAILED = "failed"


@strawberry.type(description="An HTTP header to send with an upload.")
class HttpHeader:
    name: str
    value: str


@strawberry.type(
    description="Where and how to send an upload's bytes, straight to storage (no GraphQL, "
    "no Roost token): `method` to `url` with exactly these `headers` (and, for a POST "
    "form, these `fields` before the file) until `expiresAt`. Then name `id` in "
    "createPost's `uploadIds`."
)
class MediaUpload:
    id: strawberry.ID
    url: str
    method: str
    headers: list[HttpHeader]
    fields: list[HttpHeader]
    expires_at: dt.datetime

    @classmethod
    def of(cls, upload_id: object, target: UploadTarget) -> Self:
        """The GraphQL object of a reserved upload."""
        return cls(
            id=strawberry.ID(to_global_id("MediaUpload", upload_id)),  # type: ignore[arg-type]
            url=target.url,
            method=target.method,
            headers=[HttpHeader(name=n, value=v) for n, v in target.headers],
            fields=[HttpHeader(name=n, value=v) for n, v in target.fields],
            expires_at=target.expires_at,
        )


@strawberry.type(description="One rendition of a media file.")
class MediaVariant:
    name: str = strawberry.field(
        description="Its name: thumbnail (150×150, cropped), feed (1080 wide), full (1440 "
        "wide, never upscaled); for video also poster, preview and the transcodes (720p, "
        "1080p)."
    )
    url: str
    width: int
    height: int
    mime_type: str


@strawberry.type(
    description="A media file of a post: its kind, what the bytes turned out to be, its "
    "size (so a feed can reserve the space), a BlurHash placeholder, the author's alt "
    "text and, for an uploaded file, its variants."
)
class Media:
    url: str = strawberry.field(
        description="The file to show: the `full` variant (a video's largest transcode), "
        "or the external URL of a post made with one."
    )
    kind: MediaKind
    mime_type: str | None
    width: int | None
    height: int | None
    blurhash: str | None
    alt_text: str | None
    duration_seconds: float | None
    poster: MediaVariant | None = strawberry.field(description="A video's frame at 1 s.")
    variants: list[MediaVariant]

    @classmethod
    def of(cls, item: Mapping[str, Any], public_url: Callable[[str], str] | None) -> Self:
        """The GraphQL object of one stored media item (posts.media); ``public_url`` maps
        a delivery key to its URL (None: no object store, only external URLs show)."""
        variants = [
            MediaVariant(
                name=v["name"],
                url=public_url(v["key"]) if public_url else "",
                width=v["width"],
                height=v["height"],
                mime_type=v["mimeType"],
            )
            for v in item.get("variants") or ()
        ]
        by_name = {v.name: v for v in variants}
        main = by_name.get("full") or by_name.get("1080p") or by_name.get("720p")
        if main is None and variants:
            main = variants[-1]
        return cls(
            url=item.get("url") or (main.url if main else ""),
            kind=MediaKind(item["kind"]),
            mime_type=item.get("mimeType"),
            width=item.get("width"),
            height=item.get("height"),
            blurhash=item.get("blurhash"),
            alt_text=item.get("altText"),
            duration_seconds=item.get("durationSeconds"),
            poster=by_name.get("poster"),
            variants=variants,
        )


@strawberry.type(
    description="An account's picture: squares cropped to the centre of the uploaded image "
    "(avatar_320, avatar_150, avatar_64 as WebP, each with a `_jpeg` JPEG fallback; never "
    "larger than the image's shorter side)."
)
class Avatar:
    url: str = strawberry.field(description="The 150 × 150 WebP square (`avatar_150`).")
    blurhash: str | None
    variants: list[MediaVariant]

    @classmethod
    def of(cls, item: Mapping[str, Any], public_url: Callable[[str], str] | None) -> Self:
        """The GraphQL object of a stored avatar (users.avatar); ``public_url`` maps a
        delivery key to its URL."""
        variants = [
            MediaVariant(
                name=v["name"],
                url=public_url(v["key"]) if public_url else "",
                width=v["width"],
                height=v["height"],
                mime_type=v["mimeType"],
            )
            for v in item.get("variants") or ()
        ]
        by_name = {v.name: v for v in variants}
        main = by_name.get("avatar_150") or (variants[0] if variants else None)
        return cls(url=main.url if main else "", blurhash=item.get("blurhash"), variants=variants)


@strawberry.enum(description="Where your last chosen avatar upload stands.")
class AvatarUploadStatus(Enum):
    PROCESSING = "processing"
    FAILED = "failed"


@strawberry.type(
    description="The avatar upload you chose last, while it is not your avatar: PROCESSING, "
    "or FAILED with `failureReason` (UNSUPPORTED_TYPE, KIND_MISMATCH, UNDECODABLE, "
    "TRUNCATED, POLYGLOT, TOO_LARGE, TOO_MANY_PIXELS, MISSING, KNOWN_BAD_MEDIA, REPLACED); "
    "your `avatar` stays as it was meanwhile."
)
class PendingAvatar:
    upload_id: strawberry.ID
    status: AvatarUploadStatus
    failure_reason: str | None
