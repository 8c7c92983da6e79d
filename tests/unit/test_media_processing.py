"""adapters.media: the processor on real files made in the test (Pillow JPEG with EXIF
orientation and GPS, pillow-heif HEIC with GPS, PNG bombs, PyAV videos) and the known-bad
hash list. No database: the processor is pure file in, files out."""

from __future__ import annotations

import hashlib
import io
import time
import tracemalloc
import zipfile
from pathlib import Path

import av
import blurhash
import numpy as np
import pytest
from PIL import Image, ImageCms

from adapters.media.hashlist import HashList, HashListError
from adapters.media.processor import PillowAvProcessor
from domain.media.ports import MediaKind, MediaLimits, MediaRejectedError, ProcessedMedia
from tests.support import media_files

LIMITS = MediaLimits(
    max_bytes=30 * 1024 * 1024, max_pixels=50_000_000, max_side=12_000, max_video_seconds=60
)
PROCESSOR = PillowAvProcessor()


def process(
    source: Path, kind: MediaKind = "image", limits: MediaLimits = LIMITS
) -> ProcessedMedia:
    return PROCESSOR.process(source, source.parent / "out", declared_kind=kind, limits=limits)


def refused(source: Path, reason: str, kind: MediaKind = "image", **kw) -> MediaRejectedError:
    """Process ``source``, assert the refusal's ``reason`` and that nothing was left."""
    out = source.parent / "out"
    with pytest.raises(MediaRejectedError) as info:
        PROCESSOR.process(source, out, declared_kind=kind, limits=kw.get("limits", LIMITS))
    assert info.value.reason == reason, info.value.message
    assert info.value.message
    assert not list(out.iterdir()), "a refusal leaves no file behind"
    return info.value


def variants(media: ProcessedMedia) -> dict[str, tuple[str, int, int]]:
    return {v.name: (v.mime_type, v.width, v.height) for v in media.variants}


def assert_bare(path: Path) -> None:
    """The file carries no EXIF (GPS included), XMP or ICC profile."""
    with Image.open(path) as image:
        assert not image.getexif(), (path.name, dict(image.getexif()))
        assert not image.getexif().get_ifd(0x8825), path.name  # GPS IFD
        for key in ("exif", "xmp", "XML:com.adobe.xmp", "icc_profile", "comment"):
            assert key not in image.info, (path.name, key)
    raw = path.read_bytes()
    assert b"Exif\x00\x00" not in raw and b"adobe:ns:meta" not in raw, path.name
    assert b"iPhone" not in raw and b"Apple" not in raw, path.name


# --- photos: what is published -----------------------------------------------------------


def test_jpeg_variants_sizes_formats_and_no_metadata(tmp_path: Path) -> None:
    source = media_files.jpeg(tmp_path / "big.jpg", 2400, 1600)
    media = process(source)
    assert (media.kind, media.mime_type, media.width, media.height) == (
        "image",
        "image/jpeg",
        2400,
        1600,
    )
    assert variants(media) == {
        "thumbnail": ("image/webp", 150, 150),
        "thumbnail_jpeg": ("image/jpeg", 150, 150),
        "feed": ("image/webp", 1080, 720),
        "feed_jpeg": ("image/jpeg", 1080, 720),
        "full": ("image/webp", 1440, 960),
        "full_jpeg": ("image/jpeg", 1440, 960),
    }
    for v in media.variants:
        with Image.open(v.path) as image:
            assert image.format == ("WEBP" if v.mime_type == "image/webp" else "JPEG")
            assert image.size == (v.width, v.height)
        assert_bare(v.path)
    assert len(media.sha256) == 64 and len(media.phash) == 16
    int(media.phash, 16)


def test_exif_orientation_is_applied_and_a_tall_photo_stays_tall(tmp_path: Path) -> None:
    # Stored 2000 × 1500 turned a quarter; orientation 6 shows it 1500 × 2000, marker top-left.
    source = media_files.jpeg(tmp_path / "o6.jpg", 2000, 1500, orientation=6)
    media = process(source)
    assert (media.width, media.height) == (1500, 2000)
    sizes = variants(media)
    assert sizes["full"][1:] == (1440, 1920) and sizes["feed"][1:] == (1080, 1440)
    for v in media.variants:
        with Image.open(v.path) as image:
            rgb = image.convert("RGB")
            assert rgb.height >= rgb.width
            if v.name.startswith("thumbnail"):
                continue  # cropped to its centre: no corner left
            r, g, b = rgb.getpixel((2, 2))
            assert r > 200 and g < 60 and b < 60, (v.name, (r, g, b))  # the marker, top-left
        assert_bare(v.path)


def test_never_upscaled(tmp_path: Path) -> None:
    media = process(media_files.jpeg(tmp_path / "small.jpg", 800, 600))
    assert variants(media)["full"][1:] == (800, 600)
    assert variants(media)["feed"][1:] == (800, 600)
    assert variants(media)["thumbnail"][1:] == (150, 150)
    tiny = process(media_files.jpeg(tmp_path / "tiny.jpg", 90, 40, orientation=6))
    assert (tiny.width, tiny.height) == (40, 90)
    assert variants(tiny)["thumbnail"][1:] == (40, 40)
    assert variants(tiny)["full"][1:] == (40, 90)


def test_heic_with_gps_publishes_variants_without_any_metadata(tmp_path: Path) -> None:
    source = media_files.heic(tmp_path / "photo.heic", 1200, 1600)
    with Image.open(source) as original:  # the test file really carries GPS and XMP
        assert original.getexif().get_ifd(0x8825)
        assert "xmp" in original.info
    media = process(source)
    assert (media.mime_type, media.width, media.height) == ("image/heic", 1200, 1600)
    assert variants(media)["full"][1:] == (1200, 1600)
    assert variants(media)["feed"][1:] == (1080, 1440)
    for v in media.variants:
        assert_bare(v.path)


def test_png_webp_and_alpha(tmp_path: Path) -> None:
    rgba = media_files.picture(400, 300).convert("RGBA")
    rgba.putalpha(128)
    png = tmp_path / "alpha.png"
    rgba.save(png, icc_profile=ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes())
    media = process(png)
    assert media.mime_type == "image/png"
    with Image.open(variants_path(media, "feed")) as image:
        assert image.mode == "RGBA"
    with Image.open(variants_path(media, "feed_jpeg")) as image:
        assert image.mode == "RGB"
    for v in media.variants:
        assert_bare(v.path)
    webp = tmp_path / "p.webp"
    media_files.picture(500, 500).save(webp, "WEBP", exif=media_files.exif(), xmp=media_files.XMP)
    media = process(webp)
    assert (media.mime_type, media.width, media.height) == ("image/webp", 500, 500)
    for v in media.variants:
        assert_bare(v.path)


def variants_path(media: ProcessedMedia, name: str) -> Path:
    return next(v.path for v in media.variants if v.name == name)


def test_blurhash_says_which_way_the_photo_is_long_and_decodes_to_its_colours(
    tmp_path: Path,
) -> None:
    tall = process(media_files.jpeg(tmp_path / "tall.jpg", 600, 900))
    wide = process(media_files.jpeg(tmp_path / "wide.jpg", 900, 600))
    assert blurhash.is_valid_blurhash(tall.blurhash) and blurhash.is_valid_blurhash(wide.blurhash)
    # The first character encodes (x components - 1) + (y components - 1) * 9.
    assert tall.blurhash[0] == "T" and wide.blurhash[0] == "L"  # 3 x 4 and 4 x 3
    width, height = 20, round(20 * tall.height / tall.width)
    decoded = blurhash.decode(tall.blurhash, width, height)
    r, g, b = decoded.getpixel((width // 2, height - 1))
    assert b > r and b > g, (r, g, b)  # the blue bottom quarter


# --- photos: bad input -------------------------------------------------------------------


def test_wrong_magic_bytes_are_refused_whatever_was_declared(tmp_path: Path) -> None:
    text = tmp_path / "notes.jpg"
    text.write_bytes(b"<html><script>alert(1)</script></html>" * 20)
    refused(text, "UNSUPPORTED_TYPE")
    gif = tmp_path / "anim.gif"
    media_files.picture(50, 50).save(gif, "GIF")
    refused(gif, "UNSUPPORTED_TYPE")
    refused(media_files.jpeg(tmp_path / "p.jpg", 64, 64), "KIND_MISMATCH", kind="video")
    # A PNG sent as a JPEG is a PNG: the bytes decide.
    png = tmp_path / "really.jpg"
    media_files.picture(64, 64).save(png, "PNG")
    assert process(png).mime_type == "image/png"


def test_png_bomb_is_refused_from_its_header_quickly_and_with_little_memory(
    tmp_path: Path,
) -> None:
    bomb = media_files.png_bomb(tmp_path / "bomb.png")
    assert bomb.stat().st_size < 200_000
    tracemalloc.start()
    started = time.process_time()
    error = refused(bomb, "TOO_MANY_PIXELS")
    cpu = time.process_time() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 20_000_000, peak  # decoding would take 112 MB (1 bit a pixel) and more
    assert cpu < 2.0, cpu  # a full decode inflates 112 MB; refusing reads the header
    assert "30000" in error.message.replace(",", "") or "too many" in error.message.lower()
    # Under Pillow's own bomb guard, over ours: our limit refuses it from the header.
    refused(media_files.png_bomb(tmp_path / "mid.png", 9_000, 7_000), "TOO_MANY_PIXELS")
    refused(
        media_files.jpeg(tmp_path / "wide.jpg", 1300, 100),
        "TOO_MANY_PIXELS",
        limits=MediaLimits(max_bytes=10**8, max_pixels=10**8, max_side=1200, max_video_seconds=60),
    )


def test_truncated_files_are_refused(tmp_path: Path) -> None:
    for name, data in (
        ("cut.jpg", media_files.jpeg(tmp_path / "j.jpg", 640, 480).read_bytes()),
        ("cut.heic", media_files.heic(tmp_path / "h.heic", 320, 240).read_bytes()),
    ):
        cut = tmp_path / name
        cut.write_bytes(data[: len(data) * 2 // 3])
        refused(cut, "TRUNCATED")
    png = tmp_path / "p.png"
    media_files.picture(300, 300).save(png)
    cut = tmp_path / "cut.png"
    cut.write_bytes(png.read_bytes()[:-100])
    refused(cut, "TRUNCATED")
    webp = tmp_path / "p.webp"
    media_files.picture(300, 300).save(webp, "WEBP")
    cut = tmp_path / "cut.webp"
    cut.write_bytes(webp.read_bytes()[:-50])
    refused(cut, "TRUNCATED")
    empty = tmp_path / "empty.jpg"
    empty.write_bytes(b"")
    refused(empty, "UNSUPPORTED_TYPE")


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("payload.html", "<script>fetch('/steal')</script>")
    return buffer.getvalue()


def test_polyglots_are_refused(tmp_path: Path) -> None:
    photo = media_files.jpeg(tmp_path / "p.jpg", 320, 240).read_bytes()
    png = tmp_path / "p.png"
    media_files.picture(64, 64).save(png)
    webp = tmp_path / "p.webp"
    media_files.picture(64, 64).save(webp, "WEBP")
    heic = media_files.heic(tmp_path / "p.heic", 64, 64).read_bytes()
    for name, data in (
        ("zip.jpg", photo + _zip()),
        ("html.jpg", photo + b"<html><body onload=alert(1)></body></html>"),
        ("zip.png", png.read_bytes() + _zip()),
        ("zip.webp", webp.read_bytes() + _zip()),
        ("zip.heic", heic + _zip()),
        ("html.heic", heic + b"<html></html>"),
        ("motion.jpg", photo + media_files.video(tmp_path / "m.mp4", seconds=0.3).read_bytes()),
    ):
        path = tmp_path / name
        path.write_bytes(data)
        refused(path, "POLYGLOT")


def test_a_jpeg_may_carry_further_jpeg_images_and_padding(tmp_path: Path) -> None:
    # Phones append MPF images (HDR gain maps, depth maps) after the primary image.
    photo = media_files.jpeg(tmp_path / "p.jpg", 320, 240).read_bytes()
    gain_map = media_files.jpeg(tmp_path / "g.jpg", 160, 120).read_bytes()
    path = tmp_path / "mpf.jpg"
    path.write_bytes(photo + gain_map + b"\x00" * 64)
    media = process(path)
    assert (media.width, media.height) == (320, 240)


def test_sha256_and_phash(tmp_path: Path) -> None:
    source = media_files.jpeg(tmp_path / "a.jpg", 1200, 900, seed=3)
    first = process(source)
    assert first.sha256 == hashlib.sha256(source.read_bytes()).hexdigest()
    # The same picture, smaller and re-compressed: another SHA-256, a near pHash.
    with Image.open(source) as image:
        image.resize((600, 450)).save(tmp_path / "b.jpg", quality=60)
    second = process(tmp_path / "b.jpg")
    other = process(media_files.jpeg(tmp_path / "c.jpg", 1200, 900, seed=99, orientation=6))
    assert second.sha256 != first.sha256
    near = (int(first.phash, 16) ^ int(second.phash, 16)).bit_count()
    far = (int(first.phash, 16) ^ int(other.phash, 16)).bit_count()
    assert near <= 6 < far, (near, far)


# --- the known-bad list ------------------------------------------------------------------


async def test_hash_list_matches_sha256_and_near_phash(tmp_path: Path) -> None:
    listed = tmp_path / "list.txt"
    listed.write_text(
        "# known-bad media\n"
        f"sha256:{'ab' * 32}\n"
        "\n"
        "phash:ff00ff00ff00ff00  # a listed picture\n"
        "PHASH:0123456789ABCDEF\n",
        encoding="utf-8",
    )
    hashes = HashList.from_file(listed, max_distance=4)
    assert len(hashes) == 3
    assert await hashes.matches(sha256="AB" * 32, phash="")
    assert await hashes.matches(sha256="00" * 32, phash="ff00ff00ff00ff0f")  # 4 bits off
    assert not await hashes.matches(sha256="00" * 32, phash="ff00ff00ff00ffff")  # 8 bits off
    assert await hashes.matches(sha256="00" * 32, phash="0123456789abcdef")
    empty = HashList.from_file(None, max_distance=6)
    assert len(empty) == 0 and not await empty.matches(sha256="ab" * 32, phash="ff00ff00ff00ff00")


def test_hash_list_refuses_a_malformed_line_with_its_number(tmp_path: Path) -> None:
    listed = tmp_path / "list.txt"
    listed.write_text(f"sha256:{'ab' * 32}\nmd5:0123\n", encoding="utf-8")
    with pytest.raises(HashListError, match=r"list.txt:2"):
        HashList.from_file(listed, max_distance=6)
    listed.write_text("phash:123\n", encoding="utf-8")
    with pytest.raises(HashListError, match=r"list.txt:1"):
        HashList.from_file(listed, max_distance=6)


async def test_a_processed_photo_matches_the_list_that_holds_its_phash(tmp_path: Path) -> None:
    media = process(media_files.jpeg(tmp_path / "a.jpg", 1000, 800, seed=5))
    with Image.open(tmp_path / "a.jpg") as image:  # a re-encoded, smaller copy
        image.resize((500, 400)).save(tmp_path / "copy.jpg", quality=50)
    copy = process(tmp_path / "copy.jpg")
    hashes = HashList([], [media.phash], max_distance=6)
    assert await hashes.matches(sha256=copy.sha256, phash=copy.phash)
    unrelated = process(media_files.jpeg(tmp_path / "b.jpg", 1000, 800, seed=6))
    assert not await hashes.matches(sha256=unrelated.sha256, phash=unrelated.phash)


def test_sixteen_bit_and_cmyk_sources_keep_their_tones(tmp_path: Path) -> None:
    ramp = np.linspace(0, 65535, 400 * 300, dtype=np.float64).reshape(300, 400)
    Image.fromarray(ramp.astype(np.uint16)).save(tmp_path / "deep.png")
    feed = variants_path(process(tmp_path / "deep.png"), "feed")
    with Image.open(feed) as image:
        grey = image.convert("L").getpixel((200, 150))
    assert 100 < grey < 156, grey  # the middle of the ramp, not clipped to white
    media_files.picture(400, 300, marker=False).convert("CMYK").save(tmp_path / "cmyk.jpg")
    with Image.open(variants_path(process(tmp_path / "cmyk.jpg"), "feed")) as image:
        assert image.mode == "RGB"


# --- videos ------------------------------------------------------------------------------

#: What FFmpeg reports of any MP4's ``ftyp``: the only container metadata allowed out.
FTYP_KEYS = {"major_brand", "minor_version", "compatible_brands"}


def top_level_boxes(path: Path) -> list[bytes]:
    data, pos, boxes = path.read_bytes(), 0, []
    while pos < len(data):
        size = int.from_bytes(data[pos : pos + 4], "big")
        boxes.append(data[pos + 4 : pos + 8])
        if size == 1:
            size = int.from_bytes(data[pos + 8 : pos + 16], "big")
        pos += size or len(data)
    return boxes


def assert_clean_mp4(path: Path) -> None:
    """H.264 (+ AAC) in MP4, index first, no container metadata but the ftyp's, no trace
    of the source's location or title."""
    with av.open(str(path)) as video:
        assert set(video.metadata) <= FTYP_KEYS, dict(video.metadata)
        assert video.format.name.startswith("mov,mp4")
        assert video.streams.video[0].codec_context.name == "h264"
        assert all(s.codec_context.name == "aac" for s in video.streams.audio)
        for stream in video.streams:
            assert not {"location", "title", "creation_time"} & set(stream.metadata)
        assert next(video.decode(video=0)).rotation == 0
    boxes = top_level_boxes(path)
    assert boxes.index(b"moov") < boxes.index(b"mdat"), boxes  # +faststart
    raw = path.read_bytes()
    assert media_files.LOCATION.encode() not in raw and b"at home" not in raw
    assert b"\xa9xyz" not in raw and b"Lavf" not in raw


def test_video_becomes_h264_aac_mp4_with_poster_and_preview(tmp_path: Path) -> None:
    source = media_files.video(tmp_path / "clip.mp4", seconds=2, width=320, height=240, fps=30)
    with av.open(str(source)) as original:  # the source really carries a location
        assert original.metadata["location"] == media_files.LOCATION
    media = process(source, "video")
    assert (media.kind, media.mime_type, media.width, media.height) == (
        "video",
        "video/mp4",
        320,
        240,
    )
    assert media.duration_s == pytest.approx(2.0, abs=0.1)
    assert variants(media) == {
        "720p": ("video/mp4", 320, 240),  # never upscaled
        "poster": ("image/webp", 320, 240),
        "poster_jpeg": ("image/jpeg", 320, 240),
        "preview": ("image/webp", 320, 240),
    }
    assert_clean_mp4(variants_path(media, "720p"))
    with av.open(str(variants_path(media, "720p"))) as out:
        assert float(out.duration / av.time_base) == pytest.approx(2.0, abs=0.15)
        sound, picture = out.streams.audio[0], out.streams.video[0]
        assert sound.sample_rate == 48_000
        assert sound.start_time is not None and picture.start_time is not None
        start_gap = sound.start_time * sound.time_base - picture.start_time * picture.time_base
        assert abs(float(start_gap)) < 0.05  # in sync: no sound lost before the first picture
    for name in ("poster", "poster_jpeg", "preview"):
        assert_bare(variants_path(media, name))
    with Image.open(variants_path(media, "preview")) as preview:
        assert preview.n_frames == 20 and preview.info.get("loop") == 0  # 2 s at 10 a second
    assert blurhash.is_valid_blurhash(media.blurhash) and len(media.phash) == 16


def test_a_rotated_phone_video_is_turned_upright(tmp_path: Path) -> None:
    # Stored 320 x 240 with a display matrix of 90° (counter-clockwise): shown 240 x 320,
    # the stored top-left corner at the bottom left, as ffmpeg autorotates it.
    source = media_files.video(
        tmp_path / "phone.mov", seconds=1.2, width=320, height=240, fps=10, rotation=90,
        container="mov",
    )  # fmt: skip
    media = process(source, "video")
    assert (media.mime_type, media.width, media.height) == ("video/quicktime", 240, 320)
    assert variants(media)["720p"][1:] == (240, 320)
    assert_clean_mp4(variants_path(media, "720p"))
    with Image.open(variants_path(media, "poster")) as poster:
        r, g, b = poster.convert("RGB").getpixel((3, poster.height - 4))
    assert r > 200 and g < 70, (r, g, b)


def test_a_1080p_source_gets_720p_and_1080p_at_30_frames_a_second(tmp_path: Path) -> None:
    source = media_files.video(
        tmp_path / "hd.mp4", seconds=0.5, width=1920, height=1080, fps=60, audio=False
    )
    media = process(source, "video")
    assert variants(media)["720p"][1:] == (1280, 720)
    assert variants(media)["1080p"][1:] == (1920, 1080)
    for name in ("720p", "1080p"):
        assert_clean_mp4(variants_path(media, name))
        with av.open(str(variants_path(media, name))) as out:
            assert sum(1 for _ in out.decode(video=0)) == 15  # 60 a second capped at 30
            assert not out.streams.audio


def test_a_61_second_video_is_too_long(tmp_path: Path) -> None:
    source = media_files.video(
        tmp_path / "long.mp4", seconds=61, width=64, height=48, fps=2, audio=False
    )
    started = time.process_time()
    error = refused(source, "TOO_LONG", "video")
    assert time.process_time() - started < 1.0  # from the header, not by decoding
    assert "61" in error.message


def _lying_durations(path: Path, divide_by: int) -> Path:
    """``path`` with the durations of its movie, track and media headers divided."""
    data = bytearray(path.read_bytes())
    for box, offset in ((b"mvhd", 20), (b"mdhd", 20), (b"tkhd", 24)):
        at = data.find(box) + 4 + offset - 4
        value = int.from_bytes(data[at : at + 4], "big")
        data[at : at + 4] = (value // divide_by).to_bytes(4, "big")
    liar = path.with_name("liar.mp4")
    liar.write_bytes(bytes(data))
    return liar


def test_a_video_whose_header_lies_about_its_length_is_stopped_while_decoding(
    tmp_path: Path,
) -> None:
    honest = media_files.video(
        tmp_path / "v.mp4", seconds=8, width=64, height=48, fps=2, audio=False
    )
    liar = _lying_durations(honest, 8)
    with av.open(str(liar)) as probe:
        assert probe.duration / av.time_base < 2  # the header says 1 s
    limits = MediaLimits(max_bytes=10**8, max_pixels=10**8, max_side=10_000, max_video_seconds=5)
    refused(liar, "TOO_LONG", "video", limits=limits)


def test_bad_videos_are_refused(tmp_path: Path) -> None:
    clip = media_files.video(tmp_path / "v.mp4", seconds=0.5, width=64, height=48).read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(clip[: len(clip) // 2])
    refused(cut, "TRUNCATED", "video")
    zipped = tmp_path / "zip.mp4"
    zipped.write_bytes(clip + _zip())
    refused(zipped, "POLYGLOT", "video")
    refused(media_files.video(tmp_path / "w.mp4", seconds=0.3), "KIND_MISMATCH", "image")
    refused(
        media_files.video(tmp_path / "big.mp4", seconds=0.3, width=320, height=240),
        "TOO_MANY_PIXELS",
        "video",
        limits=MediaLimits(max_bytes=10**8, max_pixels=10**8, max_side=300, max_video_seconds=60),
    )
    refused(
        media_files.video(tmp_path / "heavy.mp4", seconds=0.3),
        "TOO_LARGE",
        "video",
        limits=MediaLimits(
            max_bytes=1_000, max_pixels=10**8, max_side=10_000, max_video_seconds=60
        ),
    )
    sound = tmp_path / "sound.mp4"
    with av.open(str(sound), "w", format="mp4") as out:
        stream = out.add_stream("aac", rate=48_000)
        frame = av.AudioFrame.from_ndarray(
            np.zeros((1, 1024), np.float32), format="fltp", layout="mono"
        )
        frame.sample_rate, frame.pts = 48_000, 0
        out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    refused(sound, "UNSUPPORTED_TYPE", "video")  # no video track
    garbage = tmp_path / "garbage.mp4"
    noise = bytes(range(256)) * 16
    ftyp = clip[: int.from_bytes(clip[:4], "big")]
    garbage.write_bytes(ftyp + (8 + len(noise)).to_bytes(4, "big") + b"mdat" + noise)
    refused(garbage, "UNDECODABLE", "video")  # boxes in order, but no movie in them


def test_structures_built_to_make_the_walk_slow_are_refused_at_once(tmp_path: Path) -> None:
    photo = media_files.jpeg(tmp_path / "p.jpg", 64, 64).read_bytes()
    clip = media_files.video(tmp_path / "v.mp4", seconds=0.3, audio=False).read_bytes()
    comments = tmp_path / "segments.jpg"  # two million empty COM segments
    comments.write_bytes(photo[:2] + b"\xff\xfe\x00\x02" * 2_000_000 + photo[2:])
    images = tmp_path / "images.jpg"  # two million empty "MPF images"
    images.write_bytes(photo + b"\xff\xd8\xff\xd9" * 2_000_000)
    boxes = tmp_path / "boxes.mp4"  # two million empty free boxes
    boxes.write_bytes(clip + b"\x00\x00\x00\x08free" * 2_000_000)
    png = tmp_path / "p.png"
    media_files.picture(64, 64).save(png)
    head, tail = png.read_bytes()[:33], png.read_bytes()[33:]  # after IHDR
    chunks = tmp_path / "chunks.png"  # two million empty private chunks
    chunks.write_bytes(head + b"\x00\x00\x00\x00prVt\x00\x00\x00\x00" * 2_000_000 + tail)
    for path, reason, kind in (
        (comments, "UNDECODABLE", "image"),
        (chunks, "UNDECODABLE", "image"),
        (images, "POLYGLOT", "image"),
        (boxes, "UNDECODABLE", "video"),
    ):
        started = time.process_time()
        refused(path, reason, kind)
        assert time.process_time() - started < 1.0, path.name


def test_a_video_of_more_than_240_frames_a_second_is_refused(tmp_path: Path) -> None:
    # 1,300 frames in 1 s at a 2 s limit: (2 + 1) s x 240 = 720 frames at most.
    source = media_files.video(
        tmp_path / "fast.mp4", seconds=1, width=32, height=32, fps=1300, audio=False
    )
    limits = MediaLimits(max_bytes=10**8, max_pixels=10**8, max_side=10_000, max_video_seconds=2)
    error = refused(source, "UNDECODABLE", "video", limits=limits)
    assert "240" in error.message
    slow_motion = media_files.video(
        tmp_path / "slow.mp4", seconds=1, width=32, height=32, fps=240, audio=False
    )
    assert process(slow_motion, "video", limits).duration_s == pytest.approx(1.0, abs=0.05)


def test_an_avatar_is_the_centre_square_at_three_sizes(tmp_path: Path) -> None:
    # red sides, a green middle third: the square of a 3:1 picture is its middle only
    image = Image.new("RGB", (900, 300), (230, 20, 20))
    image.paste((20, 200, 40), (300, 0, 600, 300))
    source = tmp_path / "wide.png"
    image.save(source)
    out = tmp_path / "out"
    media = PROCESSOR.process(source, out, declared_kind="image", limits=LIMITS, avatar=True)
    assert variants(media) == {
        "avatar_320": ("image/webp", 300, 300),
        "avatar_320_jpeg": ("image/jpeg", 300, 300),
        "avatar_150": ("image/webp", 150, 150),
        "avatar_150_jpeg": ("image/jpeg", 150, 150),
        "avatar_64": ("image/webp", 64, 64),
        "avatar_64_jpeg": ("image/jpeg", 64, 64),
    }
    assert (media.width, media.height) == (900, 300)
    for v in media.variants:
        with Image.open(v.path) as square:
            r, g, _ = square.convert("RGB").getpixel((1, 1))
            assert g > 150 and r < 80, (v.name, r, g)  # the corner is the green middle


def test_an_avatar_refuses_a_video_whatever_it_declares(tmp_path: Path) -> None:
    clip = media_files.video(tmp_path / "clip.mp4", seconds=1)
    out = tmp_path / "out"
    with pytest.raises(MediaRejectedError) as info:
        PROCESSOR.process(clip, out, declared_kind="video", limits=LIMITS, avatar=True)
    assert info.value.reason == "KIND_MISMATCH"
    assert not list(out.iterdir())
