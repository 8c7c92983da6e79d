"""The S3 object store (adapters/storage/s3.py) against a real S3-protocol server started
here: moto's server mode on 127.0.0.1. A client uploads with the presigned PUT over
HTTP (httpx), the store reads, streams, publishes and deletes through aioboto3.

moto does not verify SigV4 signatures (presigned or not) nor POST policies: what the
signature binds (content type, length, ``If-None-Match: *``, host, expiry) is checked
here on the URL, the size the server stored is what ``stat_raw`` reports (so the
caller compares it with the declared one), and the second upload of a key is refused
by the server itself (``If-None-Match: *``, which moto honours: 412)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import uuid
from urllib.parse import parse_qs, urlsplit

import aioboto3
import httpx
import pytest

from adapters.storage.keys import InvalidKeyError
from adapters.storage.s3 import IMMUTABLE, S3Config, S3ObjectStore
from app.container import build_object_store
from app.settings import Settings
from tests.support.s3 import CREDENTIALS, allow_public_reads, make_buckets, s3_server

JPEG = "image/jpeg"


@pytest.fixture(scope="module")
def s3_endpoint():
    """The URL of a moto S3 server of this module's own."""
    with s3_server() as url:
        yield url


@pytest.fixture
async def store(s3_endpoint):
    """A store on two fresh buckets (quarantine, delivery)."""
    tag = uuid.uuid4().hex[:10]
    quarantine, delivery = f"roost-raw-{tag}", f"roost-media-{tag}"
    await make_buckets(s3_endpoint, quarantine, delivery)
    await allow_public_reads(s3_endpoint, delivery)
    s = S3ObjectStore(
        S3Config(
            quarantine_bucket=quarantine,
            delivery_bucket=delivery,
            endpoint_url=s3_endpoint,
            access_key_id=CREDENTIALS["aws_access_key_id"],
            secret_access_key=CREDENTIALS["aws_secret_access_key"],
            addressing_style="path",
        )
    )
    yield s
    await s.aclose()


def soon(seconds: float = 900) -> dt.datetime:
    return dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)


def raw_key() -> str:
    return f"raw/{uuid.uuid4()}"


async def test_a_presigned_put_uploads_and_the_store_reads_it_back(store, tmp_path) -> None:
    key, data = raw_key(), os.urandom(2_500_000)
    target = store.presign_upload(key, content_type=JPEG, byte_size=len(data), expires_at=soon())
    assert target.method == "PUT"
    assert dict(target.headers) == {"Content-Type": JPEG, "If-None-Match": "*"}
    assert await store.stat_raw(key) is None
    async with httpx.AsyncClient() as http:
        resp = await http.put(target.url, content=data, headers=dict(target.headers))
        assert resp.status_code == 200, resp.text
        # A second upload of the key is refused by the storage: bytes cannot be swapped.
        again = await http.put(
            target.url, content=os.urandom(len(data)), headers=dict(target.headers)
        )
        assert again.status_code == 412, again.text
    stored = await store.stat_raw(key)
    assert stored is not None and (stored.size, stored.content_type) == (len(data), JPEG)
    async with httpx.AsyncClient() as http:  # quarantine is private
        got = await http.get(f"{store.config.endpoint_url}/{store.config.quarantine_bucket}/{key}")
        assert got.status_code == 403

    dest = tmp_path / "raw"
    assert await store.download_raw(key, dest, max_bytes=len(data)) == len(data)
    assert dest.read_bytes() == data
    with pytest.raises(ValueError):
        await store.download_raw(key, tmp_path / "small", max_bytes=len(data) - 1)
    assert not (tmp_path / "small").exists()

    await store.delete_raw(key)
    await store.delete_raw(key)  # a missing one is no error
    assert await store.stat_raw(key) is None
    with pytest.raises(FileNotFoundError):
        await store.download_raw(key, tmp_path / "gone", max_bytes=10)


async def test_the_signature_binds_type_length_key_and_expiry(store) -> None:
    key = raw_key()
    expires_at = soon(900)
    target = store.presign_upload(
        key, content_type="Image/JPEG", byte_size=1234, expires_at=expires_at
    )
    url = urlsplit(target.url)
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert url.path == f"/{store.config.quarantine_bucket}/{key}"
    assert query["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"
    assert query["X-Amz-SignedHeaders"].split(";") == [
        "content-length",
        "content-type",
        "host",
        "if-none-match",
    ]
    assert 895 <= int(query["X-Amz-Expires"]) <= 900
    assert dict(target.headers)["Content-Type"] == JPEG  # normalized, as signed
    # Another size or type is another signature (what S3, MinIO and R2 check).
    other = store.presign_upload(key, content_type=JPEG, byte_size=1235, expires_at=expires_at)
    png = store.presign_upload(key, content_type="image/png", byte_size=1234, expires_at=expires_at)
    signatures = {
        parse_qs(urlsplit(t.url).query)["X-Amz-Signature"][0] for t in (target, other, png)
    }
    assert len(signatures) == 3


async def test_the_stored_size_is_what_arrived(store) -> None:
    # moto does not check the signed length: the caller's check is stat_raw's size.
    key = raw_key()
    target = store.presign_upload(key, content_type=JPEG, byte_size=10, expires_at=soon())
    async with httpx.AsyncClient() as http:
        await http.put(target.url, content=b"x" * 7, headers=dict(target.headers))
    stored = await store.stat_raw(key)
    assert stored is not None and stored.size == 7


async def test_published_variants_are_public_and_immutable(store, tmp_path) -> None:
    key = f"media/{uuid.uuid4()}/{uuid.uuid4()}/1080p.mp4"
    data = os.urandom(9 * 1024 * 1024 + 5)  # over 8 MiB: a multipart upload
    source = tmp_path / "v.mp4"
    source.write_bytes(data)
    await store.put_delivery(key, source, content_type="video/mp4")
    await store.put_delivery(key, source, content_type="video/mp4")  # a retry
    url = store.public_url(key)
    assert url == f"{store.config.endpoint_url}/{store.config.delivery_bucket}/{key}"
    async with httpx.AsyncClient() as http:
        full = await http.get(url)
        assert full.status_code == 200 and full.content == data
        assert full.headers["content-type"] == "video/mp4"
        assert full.headers["cache-control"] == IMMUTABLE
        part = await http.get(url, headers={"Range": "bytes=100-199"})
        assert part.status_code == 206 and part.content == data[100:200]
    thumb = f"media/{uuid.uuid4()}/{uuid.uuid4()}/thumbnail.webp"
    (tmp_path / "t").write_bytes(b"RIFF....WEBP")
    await store.put_delivery(thumb, tmp_path / "t", content_type="image/webp")
    await store.delete_delivery([key, thumb, f"media/{uuid.uuid4()}/never.webp"])
    async with httpx.AsyncClient() as http:
        assert (await http.get(url)).status_code == 404
        assert (await http.get(store.public_url(thumb))).status_code == 404


async def test_one_bucket_keeps_quarantine_and_delivery_apart_by_prefix(s3_endpoint, tmp_path):
    bucket = f"roost-one-{uuid.uuid4().hex[:10]}"
    await make_buckets(s3_endpoint, bucket)
    await allow_public_reads(s3_endpoint, bucket, "media/")
    settings = Settings(
        DATABASE_URL="postgresql://x/y",
        MEDIA_STORAGE="s3",
        S3_ENDPOINT_URL=s3_endpoint,
        S3_ACCESS_KEY_ID=CREDENTIALS["aws_access_key_id"],
        S3_SECRET_ACCESS_KEY=CREDENTIALS["aws_secret_access_key"],
        S3_QUARANTINE_BUCKET=bucket,
        S3_ADDRESSING_STYLE="path",
        MEDIA_PUBLIC_BASE_URL="https://cdn.example/",
    )
    store = build_object_store(settings)
    assert isinstance(store, S3ObjectStore)
    try:
        assert store.config.delivery_bucket == bucket
        raw, media = raw_key(), f"media/{uuid.uuid4()}/{uuid.uuid4()}/feed.webp"
        target = store.presign_upload(raw, content_type=JPEG, byte_size=3, expires_at=soon())
        async with httpx.AsyncClient() as http:
            assert (
                await http.put(target.url, content=b"abc", headers=dict(target.headers))
            ).is_success
        (tmp_path / "f").write_bytes(b"webp")
        await store.put_delivery(media, tmp_path / "f", content_type="image/webp")
        assert store.public_url(media) == f"https://cdn.example/{media}"
        async with httpx.AsyncClient() as http:  # what the policy makes public: media/ only
            assert (await http.get(f"{s3_endpoint}/{bucket}/{media}")).status_code == 200
            assert (await http.get(f"{s3_endpoint}/{bucket}/{raw}")).status_code == 403
        session = aioboto3.Session(**CREDENTIALS, region_name="us-east-1")
        async with session.client("s3", endpoint_url=s3_endpoint) as s3:
            listed = await s3.list_objects_v2(Bucket=bucket)
        assert sorted(o["Key"] for o in listed["Contents"]) == sorted([raw, media])
        await store.delete_delivery([media])
        assert (await store.stat_raw(raw)).size == 3  # quarantine untouched
    finally:
        await store.aclose()


@pytest.mark.parametrize("key", ["raw/../media/x", "media/../raw/x", "raw/", "raw/a?b", "/raw/x"])
async def test_bad_keys_never_reach_the_storage(store, key) -> None:
    with pytest.raises(InvalidKeyError):
        store.presign_upload(key, content_type=JPEG, byte_size=1, expires_at=soon())
    with pytest.raises(InvalidKeyError):
        await store.stat_raw(key)
    with pytest.raises(InvalidKeyError):
        store.public_url(key)


def test_s3_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="S3_QUARANTINE_BUCKET"):
        Settings(DATABASE_URL="postgresql://x/y", MEDIA_STORAGE="s3")
    aws = S3Config(quarantine_bucket="q", delivery_bucket="d", region="eu-west-3")
    assert aws.delivery_base_url == "https://d.s3.eu-west-3.amazonaws.com"
    public = S3Config(
        quarantine_bucket="q",
        delivery_bucket="d",
        endpoint_url="http://minio:9000",
        public_endpoint_url="http://127.0.0.1:9000",
        access_key_id="k",
        secret_access_key="s",
    )
    assert public.delivery_base_url == "http://127.0.0.1:9000/d"
    store = S3ObjectStore(public)
    target = store.presign_upload("raw/x", content_type=JPEG, byte_size=1, expires_at=soon())
    assert target.url.startswith("http://127.0.0.1:9000/q/raw/x?")  # the clients' endpoint
    # A store that rejects If-None-Match (S3_UPLOAD_IF_NONE_MATCH=false) signs without it.
    plain = S3ObjectStore(dataclasses.replace(public, if_none_match=False))
    target = plain.presign_upload("raw/x", content_type=JPEG, byte_size=1, expires_at=soon())
    assert dict(target.headers) == {"Content-Type": JPEG}
    signed = parse_qs(urlsplit(target.url).query)["X-Amz-SignedHeaders"][0]
    assert signed == "content-length;content-type;host"
