"""A file must be exactly one container of its type, walked by its own structure: past
the end is ``TRUNCATED``, anything after it ``POLYGLOT``; but a JPEG may be followed by
further JPEGs (CIPA Multi-Picture Format) and zero padding. Nothing is loaded whole.
"""

from __future__ import annotations

import mmap
import re
from pathlib import Path

from adapters.media.sniff import Container
from domain.media.ports import MediaRejectedError

#: Top-level box types of HEIF, MP4 and QuickTime files (ISO/IEC 14496-12, 23008-12,
#: Apple's QuickTime File Format).
TOP_LEVEL_BOXES = frozenset(
    {
        b"ftyp", b"meta", b"moov", b"mdat", b"free", b"skip", b"wide", b"uuid", b"pdin",
        b"moof", b"mfra", b"styp", b"sidx", b"ssix", b"prft", b"emsg", b"pnot", b"junk",
        b"idat", b"mpvd", b"beam",
    }
)  # fmt: skip

#: Structure counts past which a file is refused (UNDECODABLE) before its walk costs
#: seconds; real files stay far below.
MAX_JPEG_SEGMENTS = 10_000
MAX_JPEG_IMAGES = 16
MAX_BOXES = 100_000
MAX_PNG_CHUNKS = 200_000

#: A JPEG marker that ends entropy-coded data: 0xFF then neither a stuffed 0x00, a
#: restart marker (RST0-7) nor a fill byte.
_MARKER = re.compile(rb"\xff[^\x00\xd0-\xd7\xff]")


def truncated(what: str) -> MediaRejectedError:
    return MediaRejectedError("TRUNCATED", f"The {what} file is incomplete (truncated).")


def polyglot(what: str) -> MediaRejectedError:
    return MediaRejectedError(
        "POLYGLOT", f"The {what} file carries other data after its end (a polyglot file)."
    )


def check_container(path: Path, container: Container) -> None:
    """Raise MediaRejectedError ``TRUNCATED`` or ``POLYGLOT`` (the module's rule)."""
    size = path.stat().st_size
    if size == 0:
        raise truncated("empty")
    if container == "webp":
        _check_webp(path, size)
    elif container == "png":
        _check_png(path, size)
    elif container == "bmff":
        _check_bmff(path, size)
    else:
        _check_jpeg(path, size)


def _check_webp(path: Path, size: int) -> None:
    with path.open("rb") as f:
        head = f.read(12)
    riff = int.from_bytes(head[4:8], "little")
    end = 8 + riff + (riff & 1)
    if end > size:
        raise truncated("WebP")
    if end < size:
        raise polyglot("WebP")


def _check_png(path: Path, size: int) -> None:
    with path.open("rb") as f:
        pos = 8
        first = True
        for _ in range(MAX_PNG_CHUNKS):
            f.seek(pos)
            head = f.read(8)
            if len(head) < 8:
                raise truncated("PNG")
            length = int.from_bytes(head[:4], "big")
            kind = head[4:8]
            if not kind.isalpha() or length > 0x7FFFFFFF or (first and kind != b"IHDR"):
                raise MediaRejectedError("UNDECODABLE", "The PNG file is damaged.")
            first = False
            pos += 12 + length
            if pos > size:
                raise truncated("PNG")
            if kind == b"IEND":
                break
        else:
            raise MediaRejectedError("UNDECODABLE", "The PNG file has too many chunks.")
    if pos < size:
        raise polyglot("PNG")


def _check_bmff(path: Path, size: int) -> None:
    with path.open("rb") as f:
        pos = boxes = 0
        while pos < size:
            boxes += 1
            if boxes > MAX_BOXES:
                raise MediaRejectedError("UNDECODABLE", "The media file has too many boxes.")
            f.seek(pos)
            head = f.read(16)
            if len(head) < 8:
                raise polyglot("media")
            box = int.from_bytes(head[:4], "big")
            kind = head[4:8]
            if kind not in TOP_LEVEL_BOXES:
                raise polyglot("media")
            if box == 1:
                if len(head) < 16:
                    raise truncated("media")
                box = int.from_bytes(head[8:16], "big")
                if box < 16:
                    raise MediaRejectedError("UNDECODABLE", "The media file is damaged.")
            elif box == 0:
                box = size - pos  # the last box runs to the end of the file
            elif box < 8:
                raise MediaRejectedError("UNDECODABLE", "The media file is damaged.")
            if pos + box > size:
                raise truncated("media")
            pos += box


def _check_jpeg(path: Path, size: int) -> None:
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        end = jpeg_end(data, 0)
        images = 1
        while end < size:
            if data[end : end + 2] == b"\xff\xd8" and images < MAX_JPEG_IMAGES:
                end = jpeg_end(data, end)  # a further MPF image
                images += 1
            elif data[end] == 0 and _zeros_to_end(data, end):
                return
            else:
                raise polyglot("JPEG")


def _zeros_to_end(data: mmap.mmap, start: int) -> bool:
    chunk = 1 << 16
    for pos in range(start, len(data), chunk):
        if data[pos : pos + chunk].strip(b"\x00"):
            return False
    return True


def jpeg_end(data: mmap.mmap | bytes, start: int) -> int:
    """The offset just past the EOI marker of the JPEG image starting (with SOI) at
    ``start``. Raises MediaRejectedError ``TRUNCATED`` when the data ends first."""
    size = len(data)
    pos = start + 2
    for _ in range(MAX_JPEG_SEGMENTS):
        if pos + 2 > size:
            raise truncated("JPEG")
        if data[pos] != 0xFF:
            raise MediaRejectedError("UNDECODABLE", "The JPEG file is damaged.")
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte before a marker
            pos += 1
            continue
        if marker == 0xD9:  # EOI
            return pos + 2
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:  # standalone markers
            pos += 2
            continue
        if pos + 4 > size:
            raise truncated("JPEG")
        length = int.from_bytes(data[pos + 2 : pos + 4], "big")
        if length < 2:
            raise MediaRejectedError("UNDECODABLE", "The JPEG file is damaged.")
        pos += 2 + length
        if pos > size:
            raise truncated("JPEG")
        if marker == 0xDA:  # start of scan: entropy-coded data up to the next marker
            found = _MARKER.search(data, pos)
            if found is None:
                raise truncated("JPEG")
            pos = found.start()
    raise MediaRejectedError("UNDECODABLE", "The JPEG file has too many segments.")
