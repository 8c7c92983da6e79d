"""A video's outputs, written as frames arrive: H.264/AAC MP4 renditions (faststart,
no source metadata copied) and the animated WebP preview."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
from av.audio.resampler import AudioResampler
from av.audio.stream import AudioStream
from av.container import OutputContainer
from av.video.stream import VideoStream
from PIL import Image

from domain.media.ports import Variant

AUDIO_RATE = 48_000
AUDIO_BIT_RATE = 128_000
#: Peak video bit rate (kbit/s, x264 VBV) by rendition short side; CRF 23 below it.
MAX_KBPS = {720: 2_500, 1080: 5_000}
#: Frames a second at most in every rendition (faster sources drop frames).
MAX_FPS = 30
PREVIEW_SECONDS = 3.0
PREVIEW_FPS = 10
PREVIEW_SHORT_SIDE = 240


def even_size(width: int, height: int, short_side: int) -> tuple[int, int]:
    """``width`` × ``height`` scaled so the short side is ``short_side`` (never up),
    each side even (H.264 in 4:2:0) and at least 2."""
    scale = min(1.0, short_side / min(width, height))
    return max(2, round(width * scale / 2) * 2), max(2, round(height * scale / 2) * 2)


class Rendition:
    """One MP4 ``name``: H.264 yuv420p in the source's time base, AAC if it has sound."""

    def __init__(
        self,
        path: Path,
        name: str,
        size: tuple[int, int],
        *,
        time_base: Fraction,
        fps: Fraction,
        audio: bool,
        short_side: int,
    ) -> None:
        self.name, self.path = name, path
        self.width, self.height = size
        self.out: OutputContainer = av.open(
            str(path), "w", format="mp4", options={"movflags": "+faststart", "fflags": "+bitexact"}
        )
        kbps = MAX_KBPS.get(short_side, MAX_KBPS[720])
        self.video: VideoStream = self.out.add_stream(
            "libx264",
            rate=fps,
            options={
                "preset": "veryfast",
                "crf": "23",
                "profile": "high",
                "x264-params": f"vbv-maxrate={kbps}:vbv-bufsize={2 * kbps}",
            },
        )
        self.video.width, self.video.height, self.video.pix_fmt = self.width, self.height, "yuv420p"
        self.video.codec_context.time_base = time_base
        self.video.codec_context.gop_size = max(1, round(2 * float(fps)))
        self.audio: AudioStream | None = None
        if audio:
            self.audio = self.out.add_stream("aac", rate=AUDIO_RATE)
            self.audio.layout = "stereo"
            self.audio.bit_rate = AUDIO_BIT_RATE

    def write_video(self, frame: av.VideoFrame, pts: int) -> None:
        scaled = frame.reformat(self.width, self.height, "yuv420p")
        scaled.pts, scaled.time_base = pts, self.video.codec_context.time_base
        self.out.mux(self.video.encode(scaled))

    def write_audio(self, frame: av.AudioFrame) -> None:
        if self.audio is not None:
            self.out.mux(self.audio.encode(frame))

    def close(self) -> Variant:
        """Flush the encoders and finish the file (faststart rewrites it index first)."""
        self.out.mux(self.video.encode(None))
        if self.audio is not None:
            self.out.mux(self.audio.encode(None))
        self.out.close()
        return Variant(self.name, self.path, "video/mp4", self.width, self.height)

    def abort(self) -> None:
        self.out.close()


def rgb_image(frame: av.VideoFrame) -> Image.Image:
    """An ``rgb24`` frame as a Pillow image."""
    return Image.fromarray(frame.to_ndarray(format="rgb24"))


def audio_resampler() -> AudioResampler:
    """Any source sound to what the AAC encoder takes: float planar stereo at 48 kHz."""
    return AudioResampler(format="fltp", layout="stereo", rate=AUDIO_RATE)


class Preview:
    """The first ``PREVIEW_SECONDS`` as a looping animated WebP; holds at most 30 small
    frames (about 9 MB) until written."""

    def __init__(self, size: tuple[int, int]) -> None:
        self.size = even_size(*size, PREVIEW_SHORT_SIDE)
        self.frames: list[Image.Image] = []
        self._next = 0.0

    def wants(self, t: float) -> bool:
        return t < PREVIEW_SECONDS and t + 1e-6 >= self._next

    def add(self, frame: av.VideoFrame, t: float) -> None:
        self.frames.append(rgb_image(frame.reformat(*self.size, "rgb24")))
        self._next = t + 1 / PREVIEW_FPS

    def write(self, path: Path) -> Variant:
        first, *rest = self.frames
        first.save(
            path,
            "WEBP",
            save_all=True,
            append_images=rest,
            duration=round(1000 / PREVIEW_FPS),
            loop=0,
            quality=60,
            method=4,
        )
        self.frames = []
        return Variant("preview", path, "image/webp", *self.size)
