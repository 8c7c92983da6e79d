"""Real media files made on the spot for tests: photos (JPEG with EXIF orientation and
GPS, HEIC with GPS and XMP, PNG, WebP), a PNG decompression bomb, and MP4/MOV videos
encoded with PyAV (H.264 + AAC, with a location tag and a display rotation when asked).
Each writes one file and returns its path; nothing is downloaded."""

from __future__ import annotations

import zlib
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pillow_heif
from PIL import ExifTags, Image

pillow_heif.register_heif_opener()

#: GPS coordinates written into test files (Paris), as EXIF rationals.
GPS = {
    ExifTags.GPS.GPSLatitudeRef: "N",
    ExifTags.GPS.GPSLatitude: (48.0, 51.0, 29.0),
    ExifTags.GPS.GPSLongitudeRef: "E",
    ExifTags.GPS.GPSLongitude: (2.0, 17.0, 40.0),
}
XMP = (
    b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/'
    b'22-rdf-syntax-ns#"><rdf:Description xmlns:exif="http://ns.adobe.com/exif/1.0/"'
    b' exif:GPSLatitude="48,51.48N"/></rdf:RDF></x:xmpmeta>'
)
#: The ISO 6709 location a test video carries (QuickTime ``©xyz``).
LOCATION = "+48.8577+002.2950/"


def picture(width: int, height: int, *, seed: int = 1, marker: bool = True) -> Image.Image:
    """An RGB picture that encodes like a photo: a diagonal gradient, a few blocks of
    colour and mild noise; ``marker`` paints the top-left corner pure red and the bottom
    quarter blue (so orientation and BlurHash can be checked)."""
    rng = np.random.default_rng(seed)
    x = np.linspace(0, 255, width, dtype=np.float32)[None, :]
    y = np.linspace(0, 255, height, dtype=np.float32)[:, None]
    base = np.empty((height, width, 3), np.int16)
    base[..., 0] = x
    base[..., 1] = y
    base[..., 2] = (x + y) / 4 + 64
    base += rng.integers(-12, 13, size=(height, width, 1), dtype=np.int16)
    for _ in range(6):
        x0, y0 = int(rng.integers(0, width)), int(rng.integers(0, height))
        colour = rng.integers(0, 256, size=3, dtype=np.int16)
        base[y0 : y0 + height // 6, x0 : x0 + width // 6] = colour
    if marker:
        base[height * 3 // 4 :, :] = (20, 40, 230)
        base[: max(1, height // 8), : max(1, width // 8)] = (255, 0, 0)
    return Image.fromarray(np.clip(base, 0, 255).astype(np.uint8))


def exif(orientation: int | None = None, gps: bool = True) -> Image.Exif:
    """EXIF with a camera make, the ``orientation`` tag and the GPS IFD when asked."""
    data = Image.Exif()
    data[ExifTags.Base.Make] = "Apple"
    data[ExifTags.Base.Model] = "iPhone 15"
    if orientation is not None:
        data[ExifTags.Base.Orientation] = orientation
    if gps:
        data[ExifTags.IFD.GPSInfo] = GPS
    return data


def jpeg(path: Path, width: int, height: int, *, orientation: int | None = None, **kw) -> Path:
    """A JPEG of ``width`` × ``height`` stored pixels, with EXIF (GPS) and XMP. With
    ``orientation`` 6 the stored pixels are the displayed picture turned a quarter to the
    left, so a viewer that applies the tag shows ``height`` × ``width``, marker top-left."""
    if orientation == 6:
        shown = picture(height, width, seed=kw.pop("seed", 1))
        stored = shown.transpose(Image.Transpose.ROTATE_90)
    else:
        stored = picture(width, height, seed=kw.pop("seed", 1))
    stored.save(path, "JPEG", quality=kw.pop("quality", 88), exif=exif(orientation), xmp=XMP, **kw)
    return path


def heic(path: Path, width: int, height: int, *, seed: int = 1) -> Path:
    """A HEIC (HEVC, pillow-heif) with EXIF GPS and XMP."""
    picture(width, height, seed=seed).save(
        path, "HEIF", quality=70, exif=exif(), xmp=XMP, enc_params={"preset": "ultrafast"}
    )
    return path


def png_bomb(path: Path, width: int = 30_000, height: int = 30_000) -> Path:
    """A valid 1-bit PNG of ``width`` × ``height`` white pixels: ~110 KB on disk for
    30,000 × 30,000 (900 million pixels once decoded), written without holding it."""
    row = b"\x00" + b"\x00" * ((width + 7) // 8)
    packer = zlib.compressobj(9)
    block = row * 1000
    body = bytearray()
    for start in range(0, height, 1000):
        body += packer.compress(block if start + 1000 <= height else row * (height - start))
    body += packer.flush()

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data).to_bytes(4, "big")
        return len(data).to_bytes(4, "big") + kind + data + crc

    ihdr = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([1, 0, 0, 0, 0])
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", bytes(body))
        + chunk(b"IEND", b"")
    )
    return path


def video(
    path: Path,
    *,
    seconds: float,
    width: int = 160,
    height: int = 120,
    fps: int = 10,
    audio: bool = True,
    rotation: int = 0,
    container: str = "mp4",
    bit_rate: int | None = None,
    noise: bool = False,
) -> Path:
    """An H.264 (+ AAC) video of ``seconds`` at ``fps`` and ``width`` × ``height`` stored
    pixels, with a ``title`` and the ISO 6709 ``location`` tag, and ``rotation`` degrees
    in its display matrix; each frame's top-left corner red. ``noise`` makes frames that
    compress badly (for big files)."""
    rng = np.random.default_rng(7)
    with av.open(str(path), "w", format=container) as out:
        out.metadata["location"] = LOCATION
        out.metadata["title"] = "at home"
        stream = out.add_stream("libx264", rate=fps, options={"preset": "ultrafast"})
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        if bit_rate:
            stream.bit_rate = bit_rate
            stream.options = {"preset": "ultrafast", "x264-params": "nal-hrd=cbr"}
        if rotation:
            stream.set_display_rotation(rotation)
        sound = out.add_stream("aac", rate=48_000) if audio else None
        if sound is not None:
            sound.layout = "stereo"
        base = np.asarray(picture(width, height, marker=True))
        frames = round(seconds * fps)
        for i in range(frames):
            pixels = base.copy()
            pixels[height // 2 :, (i * 4) % width :][:, :8] = 255
            if noise:
                pixels ^= rng.integers(0, 64, size=pixels.shape, dtype=np.uint8)
            frame = av.VideoFrame.from_ndarray(pixels, format="rgb24")
            frame.pts = i
            frame.time_base = Fraction(1, fps)
            out.mux(stream.encode(frame))
        out.mux(stream.encode())
        if sound is not None:
            samples = 0
            tone = (np.sin(np.arange(1024) * 0.05) * 0.2).astype(np.float32)
            while samples < seconds * 48_000:
                chunk = av.AudioFrame.from_ndarray(
                    np.stack([tone, tone]), format="fltp", layout="stereo"
                )
                chunk.sample_rate = 48_000
                chunk.pts = samples
                samples += 1024
                out.mux(sound.encode(chunk))
            out.mux(sound.encode())
    return path
