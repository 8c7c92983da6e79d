"""The life of media after publishing, on real PostgreSQL and the local object store:
the hourly cleanup expires unused uploads and deletes their bytes (batch by batch, one
object's failure never stopping the others), an account's purge deletes its uploads and
every variant made from them, and its data export lists its own media URLs."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from sqlalchemy import text

from adapters.media.hashlist import HashList
from adapters.media.processor import PillowAvProcessor
from app.container import build_object_store
from domain.accounts.build_export import collect_data
from domain.accounts.config import AccountsConfig
from domain.accounts.purge import purge_account
from domain.media.cleanup_uploads import cleanup_uploads
from domain.media.config import MediaConfig, raw_key
from domain.media.process_post_media import MediaServices, process_post_media
from schema.ids import decode_global_id, to_global_id
from tests.support.media_files import jpeg
from tests.support.media_posts import create_with, upload


@pytest.fixture(autouse=True)
async def no_worker(worker):
    """These tests run the media use case themselves: the run's worker (started by other
    tests) must not take the same posts meanwhile."""
    await worker.stop()
    yield
    await worker.start()


class FailsFor:
    """The real store, whose deletes of ``keys`` fail (an object storage hiccup)."""

    def __init__(self, store, keys) -> None:
        self.store, self.keys = store, set(keys)

    def __getattr__(self, name):
        return getattr(self.store, name)

    async def delete_raw(self, key):
        if key in self.keys:
            raise OSError("storage said no")
        await self.store.delete_raw(key)


async def test_the_cleanup_expires_unused_uploads_and_deletes_their_bytes(
    gql, client, make_users, engine, settings, tmp_path
):
    (owner,) = await make_users(1)
    store = build_object_store(settings)
    data = jpeg(tmp_path / "a.jpg", 120, 90).read_bytes()
    ids = [
        decode_global_id(await upload(gql, client, owner, data), "MediaUpload", "id")
        for _ in range(7)
    ]
    fresh = decode_global_id(await upload(gql, client, owner, data), "MediaUpload", "id")
    used = await upload(gql, client, owner, data)
    assert (await create_with(gql, owner, [used], "kept"))["__typename"] == "CreatePostSuccess"
    used_id = decode_global_id(used, "MediaUpload", "id")
    async with engine.begin() as conn:  # two hours old, as is the used one
        await conn.execute(
            text(
                "UPDATE uploads SET created_at = now() - interval '2 hours'"
                " WHERE id = ANY(CAST(:ids AS uuid[]))"
            ),
            {"ids": [*ids, used_id]},
        )
    stuck = ids[3]
    config = MediaConfig(cleanup_batch=2)  # several batches
    done = await cleanup_uploads(engine, FailsFor(store, [raw_key(stuck)]), config)
    assert (done.expired, done.failed) >= (6, 1)
    async with engine.connect() as conn:
        states = dict(
            (
                await conn.execute(
                    text("SELECT id, state FROM uploads WHERE id = ANY(CAST(:ids AS uuid[]))"),
                    {"ids": [*ids, fresh, used_id]},
                )
            ).all()
        )
    assert {states[i] for i in ids if i != stuck} == {"expired"}
    assert states[stuck] == "pending"  # left for the next run, which gets it
    assert states[fresh] == "pending" and states[used_id] == "attached"
    for i in ids:
        assert (await store.stat_raw(raw_key(i)) is None) is (i != stuck)
    assert await store.stat_raw(raw_key(fresh)) is not None
    assert await store.stat_raw(raw_key(used_id)) is not None
    again = await cleanup_uploads(engine, store, config)
    assert again.expired >= 1 and again.failed == 0
    assert await store.stat_raw(raw_key(stuck)) is None
    # An expired upload cannot go into a post.
    out = await create_with(gql, owner, [upload_gid(ids[0])])
    assert (out["__typename"], out["reason"]) == ("UploadUnusableError", "EXPIRED")


def upload_gid(upload_id) -> str:
    return to_global_id("MediaUpload", upload_id)


async def published_post(gql, client, engine, settings, store, user, path) -> tuple:
    upload_id = await upload(gql, client, user, jpeg(path, 300, 200).read_bytes())
    created = await create_with(gql, user, [upload_id], "mine")
    post_id = decode_global_id(created["post"]["id"], "Post", "id")
    media = MediaServices(
        store, PillowAvProcessor(), HashList((), (), max_distance=0), settings.media_config
    )
    assert await process_post_media(engine, post_id, media, counter_shards=16) == "published"
    return post_id, decode_global_id(upload_id, "MediaUpload", "id")


async def test_the_export_lists_the_accounts_own_media_urls(
    gql, client, make_users, engine, settings, tmp_path
):
    me, other = await make_users(2)
    store = build_object_store(settings)
    post_id, _ = await published_post(gql, client, engine, settings, store, me, tmp_path / "m.jpg")
    theirs, _ = await published_post(
        gql, client, engine, settings, store, other, tmp_path / "o.jpg"
    )
    async with engine.connect() as conn:
        document = json.loads(await collect_data(conn, me.id, public_url=store.public_url))
    (item,) = document["media"]
    assert item["postId"] == str(post_id) and item["kind"] == "image"
    names = {v["name"] for v in item["variants"]}
    assert {"thumbnail", "feed", "full"} <= names
    for v in item["variants"]:
        assert v["url"] == store.public_url(f"media/{post_id}/" + v["url"].split(f"/{post_id}/")[1])
        assert str(theirs) not in v["url"]
    assert [p["state"] for p in document["posts"]] == ["published"]


async def test_the_purge_deletes_the_accounts_media_objects(
    gql, client, make_users, engine, settings, tmp_path
):
    (me,) = await make_users(1)
    store = build_object_store(settings)
    post_id, upload_id = await published_post(
        gql, client, engine, settings, store, me, tmp_path / "p.jpg"
    )
    spare = decode_global_id(
        await upload(gql, client, me, jpeg(tmp_path / "s.jpg", 50, 50).read_bytes()),
        "MediaUpload",
        "id",
    )
    folder = store.root / "delivery" / "media" / str(post_id)
    assert [p for p in folder.rglob("*") if p.is_file()]
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE users SET status = 'pending_deletion',"
                " deletion_due_at = now() - interval '1 second' WHERE id = :u"
            ),
            {"u": me.id},
        )
    done = await purge_account(
        engine,
        me.id,
        config=AccountsConfig(purge_batch=1, deletion_grace=dt.timedelta(0)),
        counter_shards=16,
        stores=None,
        feed_config=settings.feed_config,
        media_store=store,
    )
    assert done
    assert not [p for p in folder.rglob("*") if p.is_file()]
    assert await store.stat_raw(raw_key(spare)) is None
    async with engine.connect() as conn:
        left = await conn.scalar(
            text("SELECT count(*) FROM uploads WHERE owner_id = :u"), {"u": me.id}
        )
    assert left == 0
    assert await store.stat_raw(raw_key(upload_id)) is None
