"""``domain.media.ports.MediaProcessor``: size, sniffed type, container walk and SHA-256,
in that order, then the photo or video pipeline. A refusal leaves nothing in ``out_dir``.
"""

from __future__ import annotations

from pathlib import Path

from adapters.media.containers import check_container
from adapters.media.fingerprints import sha256_file
from adapters.media.images import process_photo
from adapters.media.sniff import check_kind, sniff
from adapters.media.video import process_video
from domain.media.ports import MediaKind, MediaLimits, MediaRejectedError, ProcessedMedia


class PillowAvProcessor:
    """Pillow and PyAV, in the calling thread (CPU-bound, blocking)."""

    def process(
        self,
        source: Path,
        out_dir: Path,
        *,
        declared_kind: MediaKind,
        limits: MediaLimits,
        avatar: bool = False,
    ) -> ProcessedMedia:
        """Check ``source`` and write its variants into ``out_dir`` (``avatar``: squares;
        a video is ``KIND_MISMATCH``). Raises MediaRejectedError."""
        out_dir.mkdir(parents=True, exist_ok=True)
        before = set(out_dir.iterdir())
        try:
            return self._process(
                source, out_dir, "image" if avatar else declared_kind, limits, avatar
            )
        except BaseException:
            for path in set(out_dir.iterdir()) - before:
                path.unlink(missing_ok=True)
            raise

    def _process(
        self,
        source: Path,
        out_dir: Path,
        declared_kind: MediaKind,
        limits: MediaLimits,
        avatar: bool,
    ) -> ProcessedMedia:
        size = source.stat().st_size
        if size > limits.max_bytes:
            raise MediaRejectedError(
                "TOO_LARGE",
                f"The file is {size:,} bytes; at most {limits.max_bytes:,} are accepted.",
            )
        found = sniff(source)
        check_kind(found, declared_kind)
        check_container(source, found.container)
        sha256 = sha256_file(source)
        if found.kind == "image":
            photo = process_photo(source, out_dir, found, limits, avatar=avatar)
            return ProcessedMedia(
                kind="image",
                mime_type=found.mime_type,
                width=photo.width,
                height=photo.height,
                blurhash=photo.blurhash,
                sha256=sha256,
                phash=photo.phash,
                variants=photo.variants,
            )
        clip = process_video(source, out_dir, limits)
        return ProcessedMedia(
            kind="video",
            mime_type=found.mime_type,
            width=clip.width,
            height=clip.height,
            blurhash=clip.blurhash,
            sha256=sha256,
            phash=clip.phash,
            variants=clip.variants,
            duration_s=clip.duration_s,
        )
