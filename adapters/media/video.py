"""Videos (MP4, MOV) into renditions with PyAV (docs/api/media.md "Media").

Limits are checked on the header, then again per decoded frame (a header may lie). One
streaming pass turns frames upright, caps them at 30 fps and encodes 720p (and 1080p
for a large enough source), the poster (frame at 1 s) and the preview. Only the first
video and audio streams are used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import av.filter
from av.container import InputContainer
from av.video.stream import VideoStream

from adapters.media.encode import write_still
from adapters.media.fingerprints import fingerprints
from adapters.media.images import too_many_pixels
from adapters.media.video_out import (
    MAX_FPS,
    Preview,
    Rendition,
    audio_resampler,
    even_size,
    rgb_image,
)
from domain.media.ports import MediaLimits, MediaRejectedError, Variant

POSTER_AT_S = 1.0
#: Source frames a second allowed (slow motion: 240), bounding the decoding work.
MAX_SOURCE_FPS = 240
#: Sound decoded before the first picture is kept up to this many seconds.
EARLY_AUDIO_S = 5.0


@dataclass(frozen=True, slots=True)
class Clip:
    """Upright size, duration (s), the poster's BlurHash and pHash, the variants."""

    width: int
    height: int
    duration_s: float
    blurhash: str
    phash: str
    variants: list[Variant]


def too_long(seconds: float, limits: MediaLimits) -> MediaRejectedError:
    return MediaRejectedError(
        "TOO_LONG",
        f"The video lasts {seconds:.1f} s; at most {limits.max_video_seconds:g} s are accepted.",
    )


def undecodable() -> MediaRejectedError:
    return MediaRejectedError("UNDECODABLE", "The video cannot be decoded.")


def process_video(source: Path, out_dir: Path, limits: MediaLimits) -> Clip:
    """Transcode ``source`` into ``out_dir``. Raises MediaRejectedError (TOO_LONG,
    TOO_MANY_PIXELS, UNSUPPORTED_TYPE without a video track, UNDECODABLE)."""
    try:
        container = av.open(str(source), metadata_errors="ignore")
    except (av.FFmpegError, UnicodeDecodeError, ValueError) as exc:
        raise undecodable() from exc
    with container:
        try:
            return _Transcode(container, out_dir, limits).run()
        except av.FFmpegError as exc:
            raise undecodable() from exc


def _rotation_filters(rotation: int) -> list[tuple[str, str | None]]:
    """Filters turning a frame upright from its rotation (degrees counter-clockwise)."""
    by_turn: dict[int, list[tuple[str, str | None]]] = {
        0: [],
        1: [("transpose", "cclock")],
        2: [("hflip", None), ("vflip", None)],
        3: [("transpose", "clock")],
    }
    return by_turn[round(rotation / 90) % 4]


class _Transcode:
    def __init__(self, container: InputContainer, out_dir: Path, limits: MediaLimits) -> None:
        if not container.streams.video:
            raise MediaRejectedError("UNSUPPORTED_TYPE", "The file has no video track.")
        self.container, self.out_dir, self.limits = container, out_dir, limits
        self.video: VideoStream = container.streams.video[0]
        self.video.thread_type = "AUTO"
        if self.video.time_base is None:
            raise undecodable()
        self.time_base: Fraction = self.video.time_base
        audio = container.streams.audio
        self.audio = audio[0] if audio else None
        declared = self._declared_seconds()
        if declared is not None and declared > limits.max_video_seconds:
            raise too_long(declared, limits)
        width, height = self.video.codec_context.width, self.video.codec_context.height
        if width <= 0 or height <= 0:
            raise undecodable()
        refusal = too_many_pixels(width, height, limits)
        if refusal is not None:
            raise refusal
        self.renditions: list[Rendition] = []
        self.preview: Preview | None = None
        self.graph: av.filter.Graph | None = None
        self.poster: av.VideoFrame | None = None
        self.poster_t = 0.0
        self.first_pts: int | None = None
        self.last_slot = -1
        self.last_t = 0.0
        self.decoded = 0
        self.max_frames = math.ceil((limits.max_video_seconds + 1) * MAX_SOURCE_FPS)
        self.resampler = audio_resampler()
        self.early_audio: list[av.AudioFrame] = []

    def _declared_seconds(self) -> float | None:
        """The video stream's duration from the header, else the container's."""
        if self.video.duration is not None and self.video.time_base is not None:
            return float(self.video.duration * self.video.time_base)
        if self.container.duration is not None:
            return self.container.duration / av.time_base
        return None

    def run(self) -> Clip:
        try:
            streams = [s for s in (self.video, self.audio) if s is not None]
            for packet in self.container.demux(streams):  # ends with a flush packet each
                if packet.stream is self.video:
                    for frame in self.video.decode(packet):
                        self._video_frame(frame)
                elif self.audio is not None:
                    for sound in self.audio.decode(packet):
                        self._audio_frame(sound)
            return self._finish()
        except BaseException:
            for rendition in self.renditions:
                rendition.abort()
            raise

    def _video_frame(self, frame: av.VideoFrame) -> None:
        if frame.pts is None:
            return
        if self.first_pts is None:
            self.first_pts = frame.pts
            self._start(frame)
        t = float((frame.pts - self.first_pts) * self.time_base)
        self.decoded += 1
        if self.decoded > self.max_frames:  # every frame is decoded, even those dropped
            raise MediaRejectedError(
                "UNDECODABLE", f"The video has over {MAX_SOURCE_FPS} frames a second."
            )
        if t > self.limits.max_video_seconds:
            raise too_long(t, self.limits)
        slot = math.floor(t * MAX_FPS + 1e-6)
        if slot <= self.last_slot:
            return  # over 30 frames a second: dropped
        self.last_slot, self.last_t = slot, t
        upright = self._upright(frame)
        if self.poster is None or self.poster_t < POSTER_AT_S - 1e-6:
            self.poster, self.poster_t = upright, t  # until the first frame at 1 s
        assert self.preview is not None
        if self.preview.wants(t):
            self.preview.add(upright, t)
        for rendition in self.renditions:
            rendition.write_video(upright, frame.pts)  # the source's timeline, as the sound's

    def _start(self, frame: av.VideoFrame) -> None:
        """Set up the rotation filters and the outputs from the first frame."""
        filters = _rotation_filters(frame.rotation)
        width, height = frame.width, frame.height
        if filters:
            graph = av.filter.Graph()
            nodes = [
                graph.add_buffer(
                    width=frame.width,
                    height=frame.height,
                    format=frame.format,
                    time_base=self.time_base,
                )
            ]
            nodes += [graph.add(name, args) for name, args in filters]
            nodes.append(graph.add("buffersink"))
            graph.link_nodes(*nodes).configure()
            self.graph = graph
            if len(filters) == 1:
                width, height = height, width
        self.size = (width, height)
        rate = self.video.average_rate or self.video.guessed_rate
        fps = Fraction(rate) if rate and rate <= MAX_FPS else Fraction(MAX_FPS)
        short = min(width, height)
        for name, side in (("720p", 720), ("1080p", 1080)):
            if side == 720 or short >= side:
                self.renditions.append(
                    Rendition(
                        self.out_dir / f"{name}.mp4",
                        name,
                        even_size(width, height, side),
                        time_base=self.time_base,
                        fps=fps,
                        audio=self.audio is not None,
                        short_side=side,
                    )
                )
        self.preview = Preview(self.size)

    def _upright(self, frame: av.VideoFrame) -> av.VideoFrame:
        if self.graph is None:
            return frame
        self.graph.vpush(frame)
        upright = self.graph.vpull()
        upright.pts = frame.pts
        return upright

    def _audio_frame(self, sound: av.AudioFrame) -> None:
        if sound.pts is not None and sound.time_base is not None:
            if float(sound.pts * sound.time_base) > self.limits.max_video_seconds + 1:
                return  # sound past the picture's limit is cut
        for chunk in self.resampler.resample(sound):
            self._write_audio(chunk)

    def _write_audio(self, chunk: av.AudioFrame) -> None:
        """Encode ``chunk`` everywhere; before the first picture (the video decoder lags)
        keep up to ``EARLY_AUDIO_S`` of it."""
        if not self.renditions:
            if len(self.early_audio) * chunk.samples < EARLY_AUDIO_S * chunk.sample_rate:
                self.early_audio.append(chunk)
            return
        for early in self.early_audio:
            for rendition in self.renditions:
                rendition.write_audio(early)
        self.early_audio.clear()
        for rendition in self.renditions:
            rendition.write_audio(chunk)

    def _finish(self) -> Clip:
        if self.poster is None or self.preview is None:
            raise undecodable()
        if self.audio is not None:
            for chunk in self.resampler.resample(None):
                self._write_audio(chunk)
            for early in self.early_audio:  # a clip whose sound all came early
                for rendition in self.renditions:
                    rendition.write_audio(early)
        variants = [rendition.close() for rendition in self.renditions]
        biggest = variants[-1]
        poster = rgb_image(self.poster.reformat(biggest.width, biggest.height, "rgb24"))
        self.poster = None
        variants += write_still(poster, self.out_dir, "poster")
        variants.append(self.preview.write(self.out_dir / "preview.webp"))
        declared = self._declared_seconds()
        frame_s = 1 / float(self.video.average_rate or MAX_FPS)
        duration = declared if declared is not None else self.last_t + frame_s
        width, height = self.size
        blurhash, phash = fingerprints(poster)
        return Clip(width, height, round(duration, 3), blurhash, phash, variants)
