"""Media processing: photos per second per core, and the worker's memory on a big video.

Part 1. A 12-megapixel JPEG (4032 × 3024, EXIF orientation 6, quality 90) and a HEIC of
the same size, both a gradient with blocks and noise (so that they encode like photos),
are made here. Each is processed by ``adapters.media.processor.PillowAvProcessor`` (type
sniffing, container walk, SHA-256, ONE decode, in draft mode for the JPEG, every variant
resized from the one above, BlurHash, pHash) and by a naive Pillow pipeline that writes
the same six files (thumbnail/feed/full as WebP and JPEG, same qualities): for each
variant, open, orient, resize from the full picture, save. Rounds alternate; the figure
is CPU seconds a photo (every thread of this process, ``time.process_time``), so
photos/s per core; the ratio is ours over naive (goal >= 2x).

Part 2. 1080p30 H.264 MP4s of 5 s and 15 s at 55 Mbit/s (about 35 and 105 MB; a noisy
moving picture, so the bytes are real video) are made here, and each is processed in a
child process that reports its resident memory before (imports done) and at its peak
(``ru_maxrss``), and its Python allocations' peak (tracemalloc). Streamed means the peak
does not grow with the file: three times the bytes, the same peak (what is resident is
the codecs' state: the x264 look-ahead and reference frames of the two encoders).

    .venv/bin/python -m bench.media [--rounds 3] [--video-seconds 5 15] [--video-mbps 55]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import psutil
from PIL import Image, ImageOps

from adapters.media.encode import JPEG_QUALITY, WEBP_METHOD, WEBP_QUALITY
from adapters.media.processor import PillowAvProcessor
from bench._support import bench_output, exit_with, table
from domain.media.ports import MediaLimits
from tests.support import media_files

LIMITS = MediaLimits(
    max_bytes=300 * 1024 * 1024, max_pixels=50_000_000, max_side=12_000, max_video_seconds=60
)
SIZES = {"thumbnail": 150, "feed": 1080, "full": 1440}


def naive(source: Path, out_dir: Path) -> None:
    """Open, orient, resize and save each variant from the full-size picture."""
    for name, width in SIZES.items():
        with Image.open(source) as image:
            upright = ImageOps.exif_transpose(image).convert("RGB")
            if name == "thumbnail":
                small = ImageOps.fit(upright, (width, width), Image.Resampling.LANCZOS)
            else:
                height = round(upright.height * width / upright.width)
                small = upright.resize((width, height), Image.Resampling.LANCZOS)
            small.save(out_dir / f"{name}.webp", "WEBP", quality=WEBP_QUALITY, method=WEBP_METHOD)
            small.save(out_dir / f"{name}_jpeg.jpg", "JPEG", quality=JPEG_QUALITY, optimize=True)


def ours(source: Path, out_dir: Path) -> None:
    PillowAvProcessor().process(source, out_dir, declared_kind="image", limits=LIMITS)


def timed(fn: Callable[[Path, Path], None], source: Path, out_dir: Path) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one call."""
    cpu, wall = time.process_time(), time.perf_counter()
    fn(source, out_dir)
    return time.process_time() - cpu, time.perf_counter() - wall


def photos(folder: Path, rounds: int) -> int:
    jpeg = media_files.jpeg(folder / "12mp.jpg", 4032, 3024, orientation=6, quality=90)
    heic = folder / "12mp.heic"
    media_files.picture(4032, 3024, seed=2).save(heic, "HEIF", quality=75)
    print(
        f"sources: JPEG 4032x3024 {jpeg.stat().st_size / 1e6:.1f} MB,"
        f" HEIC 4032x3024 {heic.stat().st_size / 1e6:.1f} MB; {rounds} rounds, medians"
    )
    rows = []
    for source in (jpeg, heic):
        runs: dict[str, list[tuple[float, float]]] = {"naive": [], "ours": []}
        for fn in (naive, ours):  # warm-up: imports, codecs, colour profiles
            fn(source, folder / "warm")
        for _ in range(rounds):
            for name, fn in (("naive", naive), ("ours", ours)):
                runs[name].append(timed(fn, source, folder / name))
        cpu = {k: statistics.median(c for c, _ in v) for k, v in runs.items()}
        wall = {k: statistics.median(w for _, w in v) for k, v in runs.items()}
        for name in ("naive", "ours"):
            rows.append(
                [
                    f"{source.suffix[1:].upper()} {name}",
                    f"{cpu[name] * 1000:.0f} ms",
                    f"{1 / cpu[name]:.2f}",
                    f"{wall[name] * 1000:.0f} ms",
                    f"{cpu['naive'] / cpu[name]:.2f}x",
                ]
            )
    print(table(["pipeline", "CPU/photo", "photos/s/core", "wall/photo", "vs naive"], rows))
    return 0


def big_video(path: Path, seconds: float, mbps: int) -> Path:
    """A 1080p30 H.264 MP4 at ``mbps`` (constant bit rate) of a noisy moving picture."""
    width, height, fps = 1920, 1080, 30
    kbps = mbps * 1000
    params = f"nal-hrd=cbr:bitrate={kbps}:vbv-maxrate={kbps}:vbv-bufsize={kbps}"
    base = np.asarray(media_files.picture(width, height))
    noise = np.random.default_rng(1).integers(0, 24, size=(height, width, 3), dtype=np.uint8)
    with av.open(str(path), "w", format="mp4") as out:
        stream = out.add_stream(
            "libx264", rate=fps, options={"preset": "ultrafast", "x264-params": params}
        )
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for i in range(round(seconds * fps)):
            frame = av.VideoFrame.from_ndarray(base + np.roll(noise, i * 7, axis=1), format="rgb24")
            frame.pts, frame.time_base = i, Fraction(1, fps)
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return path


def child(source: Path, out_dir: Path) -> None:
    """Run in the child: process ``source``, print the memory figures as JSON."""
    before = psutil.Process().memory_info().rss
    tracemalloc.start()
    cpu, wall = time.process_time(), time.perf_counter()
    media = PillowAvProcessor().process(source, out_dir, declared_kind="video", limits=LIMITS)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    _, traced = tracemalloc.get_traced_memory()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    sizes = {v.name: v.path.stat().st_size for v in media.variants}
    print(json.dumps({"before": before, "peak": peak, "traced": traced, "cpu": cpu,
                      "wall": wall, "duration": media.duration_s, "sizes": sizes}))  # fmt: skip


def video(folder: Path, lengths: Sequence[float], mbps: int) -> int:
    rows, growths = [], []
    for seconds in lengths:
        started = time.perf_counter()
        source = big_video(folder / f"big-{seconds:g}.mp4", seconds, mbps)
        made = time.perf_counter() - started
        size = source.stat().st_size
        done = subprocess.run(
            [sys.executable, "-m", "bench.media", "--child", str(source), str(folder / "out")],
            check=True,
            capture_output=True,
            text=True,
        )
        got = json.loads(done.stdout.strip().splitlines()[-1])
        growth = got["peak"] - got["before"]
        growths.append(growth)
        rows.append(
            [
                f"{seconds:g} s 1080p30 at {mbps} Mbit/s",
                f"{size / 1e6:.0f}",
                f"{got['before'] / 1e6:.0f}",
                f"{got['peak'] / 1e6:.0f}",
                f"{growth / 1e6:.0f}",
                f"{got['traced'] / 1e6:.1f}",
                f"{got['wall']:.0f} s / {got['cpu']:.0f} s",
            ]
        )
        print(
            f"{seconds:g} s source made in {made:.0f} s; outputs (MB): "
            + ", ".join(f"{k} {v / 1e6:.1f}" for k, v in got["sizes"].items())
        )
        source.unlink()
    print(
        table(
            ["video (child process)", "file MB", "RSS before MB", "peak RSS MB",
             "growth MB", "tracemalloc MB", "wall / CPU"],
            rows,
        )
    )  # fmt: skip
    if len(growths) > 1:
        print(
            f"peak growth, longest / shortest file: {growths[-1] / growths[0]:.2f}"
            f" for files {rows[-1][1]} / {rows[0][1]} MB: the memory is the codecs' (x264"
            " look-ahead and reference frames of two encoders), not the file's"
        )
    return 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=3, help="timed runs of each pipeline a photo")
    p.add_argument(
        "--video-seconds", type=float, nargs="+", default=[5.0, 15.0],
        help="lengths of the videos (the last ~100 MB at the default rate)",
    )  # fmt: skip
    p.add_argument("--video-mbps", type=int, default=55, help="its bit rate (Mbit/s)")
    p.add_argument("--no-video", action="store_true", help="photos only")
    p.add_argument("--child", nargs=2, metavar=("SOURCE", "OUT_DIR"), help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        child(Path(args.child[0]), Path(args.child[1]))
        return 0
    with (
        bench_output("media", "media: photos per core, video memory"),
        tempfile.TemporaryDirectory(prefix="roost-bench-media-") as tmp,
    ):
        folder = Path(tmp)
        for name in ("warm", "naive", "ours", "out"):
            (folder / name).mkdir()
        print(f"load average at start: {psutil.getloadavg()[0]:.2f} on {psutil.cpu_count()} cores")
        photos(folder, args.rounds)
        if not args.no_video:
            video(folder, args.video_seconds, args.video_mbps)
        print(f"load average at end: {psutil.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    exit_with(main)
