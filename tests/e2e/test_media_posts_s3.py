"""The whole media flow with MEDIA_STORAGE=s3 against a real S3-protocol server (moto's
server mode, started here): reserve an upload, PUT the bytes to the presigned URL
(straight to the storage, no Roost in between), create the post, the media worker
reads quarantine and writes the variants to the delivery bucket, the post publishes,
the variants are fetched from the storage with immutable caching, the raw object goes.

Its own database, API and worker (own queue, own relay), so no process of the suite
on the local store ever takes one of these jobs."""

from __future__ import annotations

import io
import uuid

import httpx
import pytest
from PIL import Image

from adapters.storage.s3 import IMMUTABLE, S3ObjectStore
from app.asgi import create_app
from app.container import build_object_store
from app.database import create_engine
from schema.ids import decode_global_id
from tests.support.graphql import GQL
from tests.support.media_files import jpeg
from tests.support.media_posts import create_with, post_as_seen, reserve
from tests.support.s3 import CREDENTIALS, allow_public_reads, make_buckets, s3_server
from tests.support.servers import throwaway_database
from tests.support.users import user_maker
from tests.support.worker import WorkerControl


@pytest.fixture(scope="module")
def s3_database():
    with throwaway_database() as url:
        yield url


@pytest.fixture(scope="module")
def s3_endpoint():
    with s3_server() as url:
        yield url


@pytest.fixture
async def on_s3(settings, s3_database, s3_endpoint):
    """(settings, gql, make_users, worker) of an API and a worker on S3 buckets of
    their own, on the module's database."""
    tag = uuid.uuid4().hex[:10]
    quarantine, delivery = f"roost-raw-{tag}", f"roost-media-{tag}"
    await make_buckets(s3_endpoint, quarantine, delivery)
    await allow_public_reads(s3_endpoint, delivery)
    s3_settings = settings.model_copy(
        update={
            "database_url": s3_database,
            "arq_queue": f"roost-test-s3:{tag}",
            "media_storage": "s3",
            "s3_endpoint_url": s3_endpoint,
            "s3_access_key_id": CREDENTIALS["aws_access_key_id"],
            "s3_secret_access_key": CREDENTIALS["aws_secret_access_key"],
            "s3_quarantine_bucket": quarantine,
            "s3_delivery_bucket": delivery,
            "s3_addressing_style": "path",
        }
    )
    engine = create_engine(s3_database, pool_size=5, max_overflow=5)
    app = create_app(s3_settings, engine=engine)
    worker = WorkerControl(s3_settings, engine)
    await worker.start()
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://roost.test") as client:
        try:
            yield s3_settings, GQL(client), user_maker(engine, s3_settings), worker
        finally:
            await worker.stop()
            await engine.dispose()


async def test_a_photo_post_publishes_through_s3(on_s3, tmp_path) -> None:
    settings, gql, make_users, worker = on_s3
    (author,) = await make_users(1)
    data = jpeg(tmp_path / "p.jpg", 1600, 1200, orientation=6).read_bytes()
    target = await reserve(gql, author, data)
    assert target["url"].startswith(f"{settings.s3_endpoint_url}/{settings.s3_quarantine_bucket}/")
    assert "X-Amz-Signature=" in target["url"]
    headers = {h["name"]: h["value"] for h in target["headers"]}
    async with httpx.AsyncClient() as http:  # no Roost, no token: the storage itself
        sent = await http.request(target["method"], target["url"], content=data, headers=headers)
        assert sent.status_code == 200, sent.text
        again = await http.request(target["method"], target["url"], content=data, headers=headers)
        assert again.status_code == 412  # a key is uploaded once

    created = await create_with(gql, author, [target["id"]], "through s3")
    assert created["__typename"] == "CreatePostSuccess", created
    gid = created["post"]["id"]
    await worker.drain()

    seen = await post_as_seen(gql, gid, author)
    assert seen["state"] == "PUBLISHED", seen
    (media,) = seen["media"]
    assert (media["width"], media["height"]) == (1200, 1600)
    delivery_base = f"{settings.s3_endpoint_url}/{settings.s3_delivery_bucket}/media/"
    async with httpx.AsyncClient() as http:
        for v in media["variants"]:
            assert v["url"].startswith(delivery_base), v["url"]
            got = await http.get(v["url"])
            assert got.status_code == 200, (v, got.status_code)
            assert got.headers["content-type"] == v["mimeType"]
            assert got.headers["cache-control"] == IMMUTABLE
            image = Image.open(io.BytesIO(got.content))
            assert image.size == (v["width"], v["height"])
            assert not image.getexif()

    store = build_object_store(settings)
    assert isinstance(store, S3ObjectStore)
    try:
        upload_uuid = decode_global_id(target["id"], "MediaUpload", "id")
        assert await store.stat_raw(f"raw/{upload_uuid}") is None  # quarantine emptied
    finally:
        await store.aclose()
