"""Photos (JPEG, PNG, WebP, HEIC/HEIF) into their variants (docs/api/media.md "Media").

The header's pixel size is checked before any decode (Pillow's bomb guard stays on
behind it); truncation is an error. One decode (JPEG in draft mode), EXIF orientation
applied, each variant resized from the one above, sRGB, no metadata kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pillow_heif
from PIL import ExifTags, Image, ImageFile, ImageOps, UnidentifiedImageError

from adapters.media.encode import to_srgb, write_still
from adapters.media.fingerprints import fingerprints
from adapters.media.sniff import SourceType
from domain.media.ports import MediaLimits, MediaRejectedError, Variant

pillow_heif.register_heif_opener(thumbnails=False, depth_images=False, aux_images=False)

FULL_WIDTH = 1440
FEED_WIDTH = 1080
THUMBNAIL_SIDE = 150
#: An avatar's squares, largest first: (variant name, side in pixels).
AVATAR_SIDES = (("avatar_320", 320), ("avatar_150", 150), ("avatar_64", 64))
#: EXIF orientations that swap width and height (a transpose or a quarter turn).
_SWAPS = frozenset({5, 6, 7, 8})
#: Modes that Pillow resizes well as they are (others are converted to RGB(A) first).
_RESIZABLE = frozenset({"RGB", "RGBA", "L", "LA", "CMYK"})
_RESAMPLE = Image.Resampling.LANCZOS


@dataclass(frozen=True, slots=True)
class Photo:
    """A processed photo: size after orientation, BlurHash, pHash, the variants."""

    width: int
    height: int
    blurhash: str
    phash: str
    variants: list[Variant]


def too_many_pixels(width: int, height: int, limits: MediaLimits) -> MediaRejectedError | None:
    """The refusal of a ``width`` × ``height`` picture over ``limits``, or None."""
    if width * height > limits.max_pixels or max(width, height) > limits.max_side:
        return MediaRejectedError(
            "TOO_MANY_PIXELS",
            f"The picture is {width} × {height} pixels; at most {limits.max_pixels:,}"
            f" pixels and {limits.max_side:,} on a side are accepted.",
        )
    return None


def scaled(width: int, height: int, target_width: int) -> tuple[int, int]:
    """``(width, height)`` scaled to ``target_width`` wide (never up), at least 1 × 1."""
    if width <= target_width:
        return width, height
    return target_width, max(1, round(height * target_width / width))


def process_photo(
    source: Path, out_dir: Path, found: SourceType, limits: MediaLimits, *, avatar: bool = False
) -> Photo:
    """Decode ``source`` (already sniffed as ``found``) once and write its variants (a
    post's, or with ``avatar`` the avatar squares) into ``out_dir``. Raises
    MediaRejectedError (TOO_MANY_PIXELS, TRUNCATED, UNDECODABLE)."""
    if ImageFile.LOAD_TRUNCATED_IMAGES:
        raise RuntimeError("ImageFile.LOAD_TRUNCATED_IMAGES must be False: truncation is an error")
    assert found.pillow_format is not None
    try:
        image = Image.open(source, formats=[found.pillow_format])
    except Image.DecompressionBombError as exc:
        raise MediaRejectedError("TOO_MANY_PIXELS", "The picture has too many pixels.") from exc
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise MediaRejectedError("UNDECODABLE", "The photo cannot be decoded.") from exc
    with image:
        return _photo(image, out_dir, limits, avatar)


def _photo(image: ImageFile.ImageFile, out_dir: Path, limits: MediaLimits, avatar: bool) -> Photo:
    refusal = too_many_pixels(*image.size, limits)
    if refusal is not None:
        raise refusal
    orientation = _orientation(image)
    width, height = image.size
    if orientation in _SWAPS:
        width, height = height, width
    full_size = _avatar_size(width, height) if avatar else scaled(width, height, FULL_WIDTH)
    if image.format == "JPEG":
        image.draft(None, full_size[::-1] if orientation in _SWAPS else full_size)
    icc = image.info.get("icc_profile")
    try:
        image.load()
    except OSError as exc:
        reason = "TRUNCATED" if "truncat" in str(exc).lower() else "UNDECODABLE"
        raise MediaRejectedError(reason, "The photo is incomplete or damaged.") from exc
    except (SyntaxError, ValueError, EOFError) as exc:
        raise MediaRejectedError("UNDECODABLE", "The photo cannot be decoded.") from exc
    decoded: Image.Image = image
    if orientation != 1:
        decoded = ImageOps.exif_transpose(image)
    if decoded.mode not in _RESIZABLE:
        decoded = to_srgb(decoded, icc)
        icc = None
    full = _resized(decoded, full_size)
    full = to_srgb(full, icc)
    if avatar:
        return _avatar(full, out_dir, width, height)
    feed = _resized(full, scaled(*full.size, FEED_WIDTH))
    thumbnail = _centre_square(feed, min(THUMBNAIL_SIDE, *feed.size))
    variants = [
        *write_still(thumbnail, out_dir, "thumbnail"),
        *write_still(feed, out_dir, "feed"),
        *write_still(full, out_dir, "full"),
    ]
    blurhash, phash = fingerprints(feed)
    return Photo(width, height, blurhash, phash, variants)


def _avatar_size(width: int, height: int) -> tuple[int, int]:
    """Scaled so the shorter side is the largest avatar square (never up)."""
    side = min(width, height)
    target = min(AVATAR_SIDES[0][1], side)
    if target == side:
        return width, height
    return max(target, round(width * target / side)), max(target, round(height * target / side))


def _avatar(image: Image.Image, out_dir: Path, width: int, height: int) -> Photo:
    largest = _centre_square(image, min(AVATAR_SIDES[0][1], *image.size))
    variants: list[Variant] = []
    for name, side in AVATAR_SIDES:
        square = _resized(largest, (min(side, largest.width),) * 2)
        variants += write_still(square, out_dir, name)
    blurhash, phash = fingerprints(largest)
    return Photo(width, height, blurhash, phash, variants)


def _orientation(image: Image.Image) -> int:
    """The EXIF orientation (1-8; 1 when absent or unreadable)."""
    try:
        value = image.getexif().get(ExifTags.Base.Orientation, 1)
    except (OSError, SyntaxError, ValueError, TypeError):
        return 1
    return value if isinstance(value, int) and 1 <= value <= 8 else 1


def _centre_square(image: Image.Image, side: int) -> Image.Image:
    """The largest centred square of ``image``, resized to ``side`` × ``side``."""
    width, height = image.size
    crop = min(width, height)
    left, top = (width - crop) / 2, (height - crop) / 2
    box = (left, top, left + crop, top + crop)
    return image.resize((side, side), _RESAMPLE, box=box, reducing_gap=3.0)


def _resized(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    if image.size == size:
        return image
    return image.resize(size, _RESAMPLE, reducing_gap=3.0)
