"""A source's type by its first bytes (magic numbers, ``ftyp`` brands: ISO/IEC 23008-12
and the MP4 registration authority), never by what the client declared."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from domain.media.ports import MediaKind, MediaRejectedError

Container = Literal["jpeg", "png", "webp", "bmff"]

#: HEIF still-image brands that libheif decodes as HEVC (iPhone photos: ``heic``).
HEIC_BRANDS = frozenset({b"heic", b"heix", b"heim", b"heis"})
#: Generic HEIF brands: HEIC only when a compatible brand says HEVC (else AVIF, refused).
HEIF_GENERIC_BRANDS = frozenset({b"mif1", b"msf1", b"mif2"})
#: MP4 / QuickTime brands of files that hold video.
VIDEO_BRANDS = frozenset(
    {
        b"isom", b"iso2", b"iso3", b"iso4", b"iso5", b"iso6", b"iso7", b"iso8", b"iso9",
        b"mp41", b"mp42", b"mp71", b"avc1", b"qt  ", b"M4V ", b"M4VH", b"M4VP", b"MSNV",
        b"mmp4", b"dash", b"3gp4", b"3gp5", b"3gp6", b"3g2a",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class SourceType:
    """``kind``, MIME type, container family, Pillow's format name (images)."""

    kind: MediaKind
    mime_type: str
    container: Container
    pillow_format: str | None = None


JPEG = SourceType("image", "image/jpeg", "jpeg", "JPEG")
PNG = SourceType("image", "image/png", "png", "PNG")
WEBP = SourceType("image", "image/webp", "webp", "WEBP")
HEIC = SourceType("image", "image/heic", "bmff", "HEIF")
MP4 = SourceType("video", "video/mp4", "bmff")
MOV = SourceType("video", "video/quicktime", "bmff")

_HEAD = 64


def sniff(path: Path) -> SourceType:
    """The type of the file at ``path``; MediaRejectedError ``UNSUPPORTED_TYPE`` unless
    JPEG, PNG, WebP, HEIC/HEIF, MP4 or MOV."""
    with path.open("rb") as f:
        head = f.read(_HEAD)
        if head[4:8] == b"ftyp":
            size = int.from_bytes(head[0:4], "big")
            if 16 <= size <= 4096:
                f.seek(0)
                head = f.read(size)
    found = sniff_bytes(head)
    if found is None:
        raise MediaRejectedError(
            "UNSUPPORTED_TYPE",
            "The file is not a JPEG, PNG, WebP or HEIC photo, nor an MP4 or MOV video.",
        )
    return found


def sniff_bytes(head: bytes) -> SourceType | None:
    """The type ``head`` (the whole ``ftyp`` box for BMFF) announces, or None."""
    if head[:3] == b"\xff\xd8\xff":
        return JPEG
    if head[:8] == b"\x89PNG\r\n\x1a\n":
        return PNG
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return WEBP
    if head[4:8] == b"ftyp" and len(head) >= 16:
        return _by_brand(head)
    return None


def _by_brand(ftyp: bytes) -> SourceType | None:
    size = min(int.from_bytes(ftyp[0:4], "big"), len(ftyp))
    major = ftyp[8:12]
    compatible = {ftyp[i : i + 4] for i in range(16, size - 3, 4)}
    if major in HEIC_BRANDS:
        return HEIC
    if major in HEIF_GENERIC_BRANDS:
        return HEIC if compatible & HEIC_BRANDS else None
    if major == b"qt  ":
        return MOV
    if major in VIDEO_BRANDS:
        return MP4
    # A file whose major brand is unknown but that lists a video brand (e.g. "XAVC").
    if compatible & (VIDEO_BRANDS - {b"qt  "}):
        return MP4
    return None


def check_kind(found: SourceType, declared: MediaKind) -> None:
    """Raise MediaRejectedError ``KIND_MISMATCH`` unless ``found`` is ``declared``."""
    if found.kind != declared:
        raise MediaRejectedError(
            "KIND_MISMATCH",
            f"The file is {'a video' if found.kind == 'video' else 'a photo'}, but it was"
            f" uploaded as {'a video' if declared == 'video' else 'a photo'}.",
        )
