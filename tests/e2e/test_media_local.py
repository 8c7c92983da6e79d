"""The local object store (adapters/storage/local/) against Roost's own endpoints over a
real socket (app/media_routes.py): signed uploads with their checks and hard size
limit, nothing left behind by a refused or broken upload, published media served with
immutable caching and byte ranges, quarantine never served."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from adapters.storage.keys import InvalidKeyError
from adapters.storage.local import LocalObjectStore
from app.asgi import create_app
from app.container import build_object_store
from tests.support.servers import serving

JPEG = "image/jpeg"


@pytest.fixture
async def served(settings, engine, tmp_path):
    """(base URL, store) of an app served by uvicorn on a media folder of its own; the
    store signs URLs for that base, with the app's key."""
    media = tmp_path / "media"
    app_settings = settings.model_copy(
        update={"media_dir": media, "media_upload_idle_timeout_s": 1.0}
    )
    app = create_app(app_settings, engine=engine)
    async with serving(app) as base:
        store = LocalObjectStore(
            media,
            signing_key=app_settings.media_signing_secret,
            upload_base_url=base,
            public_base_url=base,
        )
        yield base, store


def soon(seconds: float = 900) -> dt.datetime:
    return dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)


def raw_key() -> str:
    return f"raw/{uuid.uuid4()}"


def leftovers(store: LocalObjectStore) -> list[Path]:
    """Every file of the quarantine and temporary folders."""
    return [p for base in (store.quarantine, store.tmp) for p in base.rglob("*") if p.is_file()]


async def raw_request(base: str, head: str, body: bytes = b"", *, then_close: bool = True) -> bytes:
    """Send ``head`` (request line and headers, CRLF-joined, no blank line) and ``body``
    over a fresh socket; return everything the server answered until it closed."""
    url = urlsplit(base)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    writer.write(head.encode() + b"\r\n\r\n" + body)
    await writer.drain()
    if then_close:
        writer.write_eof()
    try:
        async with asyncio.timeout(10):
            return await reader.read(-1)
    finally:
        writer.close()


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


# --- uploads ----------------------------------------------------------------------------


async def test_a_signed_upload_lands_in_quarantine(served) -> None:
    base, store = served
    key, data = raw_key(), os.urandom(300_000)
    target = store.presign_upload(key, content_type=JPEG, byte_size=len(data), expires_at=soon())
    assert target.method == "PUT" and dict(target.headers) == {"Content-Type": JPEG}
    async with httpx.AsyncClient() as http:
        resp = await http.put(target.url, content=data, headers=dict(target.headers))
    assert resp.status_code == 201, resp.text
    assert resp.json() == {"key": key, "size": len(data)}
    stored = await store.stat_raw(key)
    assert stored is not None and (stored.size, stored.content_type) == (len(data), JPEG)
    dest = store.root / "copy"
    assert await store.download_raw(key, dest, max_bytes=len(data)) == len(data)
    assert dest.read_bytes() == data
    with pytest.raises(ValueError):
        await store.download_raw(key, store.root / "small", max_bytes=len(data) - 1)
    assert not (store.root / "small").exists()
    assert not list(store.tmp.iterdir())
    # The bytes are nowhere under /media, whatever path names them.
    async with httpx.AsyncClient() as http:
        for path in (key, f"../quarantine/{key}", f"..%2Fquarantine%2F{key}", key.split("/")[1]):
            assert (await http.get(f"{base}/media/{path}")).status_code == 404, path
    await store.delete_raw(key)
    assert await store.stat_raw(key) is None
    await store.delete_raw(key)  # a missing one is no error
    with pytest.raises(FileNotFoundError):
        await store.download_raw(key, dest, max_bytes=10)


async def test_an_empty_upload_is_an_upload(served) -> None:
    _, store = served
    key = raw_key()
    target = store.presign_upload(key, content_type="video/mp4", byte_size=0, expires_at=soon())
    async with httpx.AsyncClient() as http:
        resp = await http.put(target.url, content=b"", headers={"Content-Type": "video/mp4"})
    assert resp.status_code == 201
    assert (await store.stat_raw(key)).size == 0


@pytest.mark.parametrize(
    ("tamper", "status", "code"),
    [
        (lambda u: u[:-1] + ("0" if u[-1] != "0" else "1"), 403, "FORBIDDEN"),
        (lambda u: u.replace("size=5", "size=6"), 403, "FORBIDDEN"),
        (lambda u: u.replace("type=image%2Fjpeg", "type=image%2Fpng"), 403, "FORBIDDEN"),
        (lambda u: u.replace("/raw/", "/raw/x"), 403, "FORBIDDEN"),
        (lambda u: u.split("&signature=")[0], 400, "BAD_REQUEST"),
        (lambda u: u.replace("expires=", "expires=-"), 400, "BAD_REQUEST"),
    ],
    ids=["signature", "size", "type", "key", "no-signature", "bad-expiry"],
)
async def test_a_tampered_url_is_refused_and_leaves_nothing(served, tamper, status, code) -> None:
    _, store = served
    key = raw_key()
    target = store.presign_upload(key, content_type=JPEG, byte_size=5, expires_at=soon())
    async with httpx.AsyncClient() as http:
        resp = await http.put(tamper(target.url), content=b"12345", headers={"Content-Type": JPEG})
    assert resp.status_code == status, resp.text
    assert resp.json()["error"]["code"] == code
    assert leftovers(store) == []


async def test_an_expired_url_is_refused(served) -> None:
    _, store = served
    key = raw_key()
    target = store.presign_upload(
        key, content_type=JPEG, byte_size=3, expires_at=dt.datetime.now(dt.UTC)
    )
    async with httpx.AsyncClient() as http:
        resp = await http.put(target.url, content=b"abc", headers={"Content-Type": JPEG})
    assert resp.status_code == 410 and resp.json()["error"]["code"] == "LINK_EXPIRED"
    assert await store.stat_raw(key) is None


@pytest.mark.parametrize("sent", ["image/png", "", "image/jpeg; charset=x", "IMAGE/Jpeg"])
async def test_the_content_type_must_be_the_signed_one(served, sent) -> None:
    _, store = served
    key = raw_key()
    target = store.presign_upload(key, content_type=JPEG, byte_size=3, expires_at=soon())
    async with httpx.AsyncClient() as http:
        resp = await http.put(target.url, content=b"abc", headers={"Content-Type": sent})
    if sent.strip().lower() == JPEG:  # case and spaces do not matter
        assert resp.status_code == 201
        return
    assert resp.status_code == 415 and resp.json()["error"]["code"] == "UNSUPPORTED_MEDIA_TYPE"
    assert await store.stat_raw(key) is None and leftovers(store) == []


async def test_a_larger_body_is_refused_before_it_is_read(served) -> None:
    base, store = served
    key = raw_key()
    target = store.presign_upload(key, content_type=JPEG, byte_size=1000, expires_at=soon())
    # 100 MB announced, 64 KB sent: the answer comes at once, without the rest.
    head = (
        f"PUT {path_of(target.url)} HTTP/1.1\r\nHost: x\r\nContent-Type: {JPEG}\r\n"
        f"Content-Length: {100_000_000}"
    )
    started = time.monotonic()
    answer = await raw_request(base, head, os.urandom(65_536), then_close=False)
    assert time.monotonic() - started < 5
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"PAYLOAD_TOO_LARGE" in answer and b"connection: close" in answer.lower()
    assert await store.stat_raw(key) is None and leftovers(store) == []


async def test_a_chunked_body_needs_a_length(served) -> None:
    base, store = served
    key = raw_key()
    target = store.presign_upload(key, content_type=JPEG, byte_size=5, expires_at=soon())
    head = (
        f"PUT {path_of(target.url)} HTTP/1.1\r\nHost: x\r\nContent-Type: {JPEG}\r\n"
        "Transfer-Encoding: chunked"
    )
    answer = await raw_request(base, head, b"5\r\n12345\r\n0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 411") and b"LENGTH_REQUIRED" in answer
    assert await store.stat_raw(key) is None and leftovers(store) == []


async def test_a_smaller_declared_length_is_refused(served) -> None:
    base, store = served
    key = raw_key()
    target = store.presign_upload(key, content_type=JPEG, byte_size=10, expires_at=soon())
    head = (
        f"PUT {path_of(target.url)} HTTP/1.1\r\nHost: x\r\nContent-Type: {JPEG}\r\n"
        "Content-Length: 9"
    )
    answer = await raw_request(base, head, b"123456789")
    assert answer.startswith(b"HTTP/1.1 400") and b"UPLOAD_INCOMPLETE" in answer
    assert await store.stat_raw(key) is None and leftovers(store) == []


async def test_a_body_cut_short_leaves_nothing(served) -> None:
    base, store = served
    key = raw_key()
    size = 3_000_000  # over the write buffer: part of it reached the disk
    target = store.presign_upload(key, content_type=JPEG, byte_size=size, expires_at=soon())
    head = (
        f"PUT {path_of(target.url)} HTTP/1.1\r\nHost: x\r\nContent-Type: {JPEG}\r\n"
        f"Content-Length: {size}"
    )
    await raw_request(base, head, os.urandom(size // 2 + 17))  # then the client hangs up
    await _until(lambda: leftovers(store) == [])
    assert await store.stat_raw(key) is None


async def test_a_stalled_body_times_out_and_leaves_nothing(served) -> None:
    base, store = served
    key = raw_key()
    target = store.presign_upload(key, content_type=JPEG, byte_size=2_000_000, expires_at=soon())
    head = (
        f"PUT {path_of(target.url)} HTTP/1.1\r\nHost: x\r\nContent-Type: {JPEG}\r\n"
        "Content-Length: 2000000"
    )
    started = time.monotonic()
    answer = await raw_request(base, head, os.urandom(1_500_000), then_close=False)
    assert answer.startswith(b"HTTP/1.1 408") and b"UPLOAD_TIMEOUT" in answer
    assert time.monotonic() - started < 8  # MEDIA_UPLOAD_IDLE_TIMEOUT_S=1 here
    assert await store.stat_raw(key) is None and leftovers(store) == []


async def test_a_key_is_uploaded_once(served) -> None:
    _, store = served
    key = raw_key()
    target = store.presign_upload(key, content_type=JPEG, byte_size=4, expires_at=soon())
    headers = {"Content-Type": JPEG}
    async with httpx.AsyncClient() as http:
        assert (await http.put(target.url, content=b"good", headers=headers)).status_code == 201
        again = await http.put(target.url, content=b"evil", headers=headers)
        assert again.status_code == 409 and again.json()["error"]["code"] == "UPLOAD_EXISTS"
        dest = store.root / "d"
        await store.download_raw(key, dest, max_bytes=4)
        assert dest.read_bytes() == b"good"
        # Processed and deleted: the URL, still valid, cannot bring bytes back.
        await store.delete_raw(key)
        late = await http.put(target.url, content=b"evil", headers=headers)
        assert late.status_code == 409
    assert await store.stat_raw(key) is None and leftovers(store) == []


async def test_concurrent_uploads_of_one_key_store_one_body(served) -> None:
    _, store = served
    key = raw_key()
    size = 2_500_000
    target = store.presign_upload(key, content_type=JPEG, byte_size=size, expires_at=soon())
    bodies = [bytes([i]) * size for i in range(6)]
    async with httpx.AsyncClient() as http:
        answers = await asyncio.gather(
            *(http.put(target.url, content=b, headers={"Content-Type": JPEG}) for b in bodies)
        )
    statuses = sorted(a.status_code for a in answers)
    assert statuses.count(201) == 1 and set(statuses) == {201, 409}, statuses
    dest = store.root / "one"
    await store.download_raw(key, dest, max_bytes=size)
    assert dest.read_bytes() in bodies
    assert [p for p in store.tmp.rglob("*") if p.is_file()] == []


@pytest.mark.parametrize(
    "path",
    [
        "/uploads/raw/../delivery/x",
        "/uploads/raw/%2e%2e/%2e%2e/etc",
        "/uploads/media/p/u/feed.webp",
        "/uploads/raw/.hidden",
        "/uploads/raw/a%00b",
        "/uploads/raw//x",
        "/uploads/" + "raw/" + "a" * 600,
    ],
)
async def test_keys_outside_the_grammar_are_refused(served, path) -> None:
    base, store = served
    async with httpx.AsyncClient() as http:
        resp = await http.put(
            f"{base}{path}?type=image%2Fjpeg&size=1&expires=9999999999&signature={'0' * 64}",
            content=b"x",
            headers={"Content-Type": JPEG},
        )
    assert resp.status_code in (400, 404), (path, resp.status_code)
    if resp.status_code == 400:
        assert resp.json()["error"]["code"] == "BAD_REQUEST"
    assert leftovers(store) == []


@pytest.mark.parametrize("key", ["raw/../x", "raw/", "media/a", "/raw/x", "raw/a b", "raw\\x"])
def test_the_store_never_signs_or_writes_a_bad_key(tmp_path, key) -> None:
    store = LocalObjectStore(
        tmp_path, signing_key=b"k" * 32, upload_base_url="http://h", public_base_url="http://h"
    )
    with pytest.raises(InvalidKeyError):
        store.presign_upload(key, content_type=JPEG, byte_size=1, expires_at=soon())


# --- published media --------------------------------------------------------------------


async def test_published_media_are_served_immutable_with_ranges(served) -> None:
    base, store = served
    key = f"media/{uuid.uuid4()}/{uuid.uuid4()}/720p.mp4"
    data = os.urandom(200_000)
    source = store.root / "video.mp4"
    source.write_bytes(data)
    await store.put_delivery(key, source, content_type="video/mp4")
    url = store.public_url(key)
    assert url == f"{base}/{key}"
    async with httpx.AsyncClient() as http:
        full = await http.get(url, headers={"Accept-Encoding": "gzip"})
        assert full.status_code == 200 and full.content == data
        assert full.headers["content-type"] == "video/mp4"
        assert full.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert full.headers["accept-ranges"] == "bytes"
        assert "content-encoding" not in full.headers  # ranges count identity bytes
        etag = full.headers["etag"]
        assert etag.startswith('"') and not etag.startswith("W/")

        part = await http.get(url, headers={"Range": "bytes=1000-1999"})
        assert part.status_code == 206 and part.content == data[1000:2000]
        assert part.headers["content-range"] == f"bytes 1000-1999/{len(data)}"
        tail = await http.get(url, headers={"Range": "bytes=-500"})
        assert tail.status_code == 206 and tail.content == data[-500:]
        for unparsable in ("bytes=abc", "bytes=50-10", "items=0-1", "bytes"):
            whole = await http.get(url, headers={"Range": unparsable})
            assert (whole.status_code, whole.content) == (200, data), unparsable
        beyond = await http.get(url, headers={"Range": f"bytes={len(data)}-"})
        assert beyond.status_code == 416
        assert beyond.headers["content-range"] == f"bytes */{len(data)}"

        head = await http.head(url)
        assert head.status_code == 200 and head.content == b""
        assert head.headers["content-length"] == str(len(data))
        assert head.headers["etag"] == etag

        cached = await http.get(url, headers={"If-None-Match": etag})
        assert cached.status_code == 304 and cached.content == b""

        missing = await http.get(f"{base}/media/{uuid.uuid4()}/x/feed.webp")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND"
        assert (await http.head(f"{base}/media/nothing")).status_code == 404

    await store.delete_delivery([key, f"media/{uuid.uuid4()}/gone.webp"])
    async with httpx.AsyncClient() as http:
        assert (await http.get(url)).status_code == 404
    assert not (store.delivery / key).parent.exists()  # empty folders go too


async def test_a_republished_variant_replaces_the_whole_file(served) -> None:
    _, store = served
    key = f"media/{uuid.uuid4()}/{uuid.uuid4()}/feed.webp"
    for fill in (b"a", b"b"):
        source = store.root / "v"
        source.write_bytes(fill * 10_000)
        await store.put_delivery(key, source, content_type="image/webp")
    async with httpx.AsyncClient() as http:
        resp = await http.get(store.public_url(key))
    assert resp.content == b"b" * 10_000 and resp.headers["content-type"] == "image/webp"
    assert [p for p in store.tmp.rglob("*") if p.is_file()] == []


async def test_uploads_answer_cors_preflights(settings, engine, tmp_path) -> None:
    app = create_app(
        settings.model_copy(
            update={"media_dir": tmp_path, "cors_allow_origins": "https://app.example"}
        ),
        engine=engine,
    )
    async with serving(app) as base, httpx.AsyncClient() as http:
        resp = await http.options(
            f"{base}/uploads/raw/x",
            headers={
                "Origin": "https://app.example",
                "Access-Control-Request-Method": "PUT",
                "Access-Control-Request-Headers": "content-type",
            },
        )
        assert resp.status_code == 204
        assert "PUT" in resp.headers["access-control-allow-methods"]
        assert resp.headers["access-control-allow-origin"] == "https://app.example"
        other = await http.options(
            f"{base}/uploads/raw/x",
            headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "PUT"},
        )
        assert other.status_code == 400


def test_the_factory_builds_the_local_store_by_default(settings) -> None:
    store = build_object_store(settings)
    assert isinstance(store, LocalObjectStore)
    assert store.root == settings.media_root
    assert store.public_url("media/p/u/feed.webp").endswith("/media/p/u/feed.webp")


async def _until(check, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.05)


async def test_expect_100_continue_as_curl_sends_it(served) -> None:
    base, store = served
    key, data = raw_key(), os.urandom(1_500_000)  # curl asks first for bodies over 1 MB
    target = store.presign_upload(key, content_type=JPEG, byte_size=len(data), expires_at=soon())
    url = urlsplit(base)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    try:
        writer.write(
            (
                f"PUT {path_of(target.url)} HTTP/1.1\r\nHost: x\r\nContent-Type: {JPEG}\r\n"
                f"Content-Length: {len(data)}\r\nExpect: 100-continue\r\n\r\n"
            ).encode()
        )
        await writer.drain()
        async with asyncio.timeout(10):
            assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 100")
            writer.write(data)
            await writer.drain()
            assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 201")
    finally:
        writer.close()
    assert (await store.stat_raw(key)).size == len(data)

    # Refused before the body: no 100, the refusal at once.
    target = store.presign_upload(raw_key(), content_type=JPEG, byte_size=5, expires_at=soon())
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    try:
        writer.write(
            (
                f"PUT {path_of(target.url)} HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\n"
                "Content-Length: 5\r\nExpect: 100-continue\r\n\r\n"
            ).encode()
        )
        await writer.drain()
        async with asyncio.timeout(10):
            assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 415")
    finally:
        writer.close()


async def test_a_storage_failure_is_a_503_and_leaves_nothing(served) -> None:
    _, store = served
    key = raw_key()
    target = store.presign_upload(key, content_type=JPEG, byte_size=3_000_000, expires_at=soon())
    store.tmp.rmdir()
    store.tmp.write_bytes(b"")  # partial files cannot be made: as a failing disk
    try:
        async with httpx.AsyncClient() as http:
            resp = await http.put(
                target.url, content=os.urandom(3_000_000), headers={"Content-Type": JPEG}
            )
    finally:
        store.tmp.unlink()
        store.tmp.mkdir()
    assert resp.status_code == 503, resp.text
    assert resp.json()["error"]["code"] == "SERVICE_UNAVAILABLE"
    assert await store.stat_raw(key) is None and leftovers(store) == []
    async with httpx.AsyncClient() as http:  # the disk is back: the same URL works
        resp = await http.put(
            target.url, content=os.urandom(3_000_000), headers={"Content-Type": JPEG}
        )
    assert resp.status_code == 201


async def test_a_drip_fed_body_is_cut_off(served) -> None:
    # Idle timeout 1 s here: 20,000 bytes may take 1 s + 20,000 / 16 KiB/s ≈ 2.2 s.
    _, store = served
    key, size = raw_key(), 20_000
    target = store.presign_upload(key, content_type=JPEG, byte_size=size, expires_at=soon())
    url = urlsplit(store.upload_base_url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    started = time.monotonic()
    try:
        writer.write(
            (
                f"PUT {path_of(target.url)} HTTP/1.1\r\nHost: x\r\nContent-Type: {JPEG}\r\n"
                f"Content-Length: {size}\r\n\r\n"
            ).encode()
        )
        answer = b""
        for _ in range(40):  # 1,000 bytes every 0.4 s: never idle, 8 s in all
            try:
                writer.write(b"x" * 1_000)
                await writer.drain()
            except ConnectionError:  # answered and closed meanwhile
                answer = await asyncio.wait_for(reader.read(4096), 5)
                break
            try:
                answer = await asyncio.wait_for(reader.read(4096), 0.4)
            except TimeoutError:
                continue
            break
    finally:
        writer.close()
    assert answer.startswith(b"HTTP/1.1 408") and b"UPLOAD_TIMEOUT" in answer, answer[:200]
    assert 1.5 < time.monotonic() - started < 5
    await _until(lambda: leftovers(store) == [])
    assert await store.stat_raw(key) is None
