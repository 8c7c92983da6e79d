"""SHA-256, BlurHash and 64-bit pHash of a published image (after orientation)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import blurhash
import imagehash
from PIL import Image

#: The BlurHash is computed on an image this many pixels on its long side.
BLURHASH_SIDE = 32
#: Both hashes start from one downscale this many pixels on its long side.
FINGERPRINT_SIDE = 256


def sha256_file(path: Path) -> str:
    """The SHA-256 (hex) of the file at ``path``, read in blocks."""
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def fingerprints(image: Image.Image) -> tuple[str, str]:
    """The BlurHash and pHash of ``image``, from one downscale."""
    small = (
        image.copy()
        if max(image.size) <= FINGERPRINT_SIDE
        else image.resize(
            _fit(image.size, FINGERPRINT_SIDE), Image.Resampling.BICUBIC, reducing_gap=2.0
        )
    )
    return blurhash_of(small), phash_of(small)


def _fit(size: tuple[int, int], side: int) -> tuple[int, int]:
    width, height = size
    scale = side / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def blurhash_components(width: int, height: int) -> tuple[int, int]:
    """BlurHash components (x, y): 4 on the long side, 3 on the short."""
    return (4, 3) if width >= height else (3, 4)


def blurhash_of(image: Image.Image) -> str:
    """The BlurHash of ``image`` (any mode; alpha over white), from a small downscale."""
    small = image.copy()
    small.thumbnail((BLURHASH_SIDE, BLURHASH_SIDE), Image.Resampling.BILINEAR)
    small = flatten(small)
    x, y = blurhash_components(*image.size)
    return str(blurhash.encode(small, x_components=x, y_components=y))


def phash_of(image: Image.Image) -> str:
    """The 64-bit perceptual hash of ``image`` as 16 hex digits."""
    return str(imagehash.phash(flatten(image)))


def flatten(image: Image.Image) -> Image.Image:
    """``image`` in RGB: transparency composited over white."""
    if image.mode == "RGB":
        return image
    if "A" in image.getbands():
        rgba = image.convert("RGBA")
        background = Image.new("RGB", rgba.size, (255, 255, 255))
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return image.convert("RGB")
