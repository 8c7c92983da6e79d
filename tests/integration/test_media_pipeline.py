"""The media worker's use case (domain.media.process_post_media) on real PostgreSQL, the
local object store and the Pillow processor: two runs at once publish once; a known-bad
match removes the post, delivers nothing and files a report; an unreachable store
leaves the post PROCESSING with its raw bytes for the retry; deleting a post (its
author, or a moderator) deletes its media objects."""

from __future__ import annotations

import asyncio
import hashlib

import pytest
from sqlalchemy import text

from adapters.media.hashlist import HashList
from adapters.media.processor import PillowAvProcessor
from app.container import build_object_store
from domain.media.config import raw_key
from domain.media.delete_media import delete_post_media
from domain.media.process_post_media import MediaServices, process_post_media
from domain.moderation.moderators import set_moderator
from domain.moderation.remove_post import remove_post
from domain.posts.delete_post import delete_post
from schema.ids import decode_global_id
from tests.support.media_files import jpeg
from tests.support.media_posts import create_with, post_as_seen, upload


@pytest.fixture(autouse=True)
async def no_worker(worker):
    """These tests run the media use case themselves: the run's worker (started by other
    tests) must not take the same posts meanwhile."""
    await worker.stop()
    yield
    await worker.start()


@pytest.fixture
def store(settings):
    return build_object_store(settings)


def services(store, settings, known_bad=()) -> MediaServices:
    return MediaServices(
        store=store,
        processor=PillowAvProcessor(),
        known_bad=HashList(known_bad, (), max_distance=0),
        config=settings.media_config,
    )


async def processing_post(gql, client, user, data: bytes) -> tuple[str, str]:
    upload_id = await upload(gql, client, user, data)
    created = await create_with(gql, user, [upload_id], "hold on")
    assert created["__typename"] == "CreatePostSuccess", created
    return created["post"]["id"], upload_id


def delivered(store, post_id) -> list:
    return [p for p in (store.root / "delivery" / "media" / str(post_id)).rglob("*") if p.is_file()]


async def test_two_runs_at_once_publish_once(
    gql, client, make_users, engine, settings, store, tmp_path
):
    (author,) = await make_users(1)
    gid, upload_id = await processing_post(
        gql, client, author, jpeg(tmp_path / "a.jpg", 800, 600).read_bytes()
    )
    post_id = decode_global_id(gid, "Post", "id")
    media = services(store, settings)
    outcomes = await asyncio.gather(
        *(process_post_media(engine, post_id, media, counter_shards=16) for _ in range(3))
    )
    assert sorted(outcomes) == ["published", "skipped", "skipped"], outcomes
    async with engine.connect() as conn:
        created = await conn.scalar(
            text(
                "SELECT count(*) FROM outbox WHERE topic = 'post.created'"
                " AND payload->>'post_id' = :p"
            ),
            {"p": str(post_id)},
        )
    assert created == 1
    assert (await post_as_seen(gql, gid, author))["state"] == "PUBLISHED"
    assert len(delivered(store, post_id)) >= 3  # every variant of the winner is there
    upload_uuid = decode_global_id(upload_id, "MediaUpload", "id")
    assert await store.stat_raw(raw_key(upload_uuid)) is None
    # and once more, later: nothing changes
    assert await process_post_media(engine, post_id, media, counter_shards=16) == "skipped"


async def test_a_known_bad_match_removes_the_post_and_files_a_report(
    gql, client, make_users, engine, settings, store, tmp_path
):
    (author,) = await make_users(1)
    data = jpeg(tmp_path / "bad.jpg", 640, 480, seed=7).read_bytes()
    gid, upload_id = await processing_post(gql, client, author, data)
    post_id = decode_global_id(gid, "Post", "id")
    media = services(store, settings, known_bad=[hashlib.sha256(data).hexdigest()])
    assert await process_post_media(engine, post_id, media, counter_shards=16) == "removed"
    assert await post_as_seen(gql, gid, author) is None  # not even its author sees it
    assert delivered(store, post_id) == []
    async with engine.connect() as conn:
        report = (
            await conn.execute(
                text("SELECT reporter_id, reason, status, user_id FROM reports WHERE post_id = :p"),
                {"p": post_id},
            )
        ).one()
        post = (
            await conn.execute(
                text("SELECT state, deleted_at FROM posts WHERE id = :p"), {"p": post_id}
            )
        ).one()
        fanned = await conn.scalar(
            text(
                "SELECT count(*) FROM outbox"
                " WHERE payload->>'post_id' = :p AND topic = 'post.created'"
            ),
            {"p": str(post_id)},
        )
    assert (report.reporter_id, report.reason, report.status) == (None, "known_bad_media", "open")
    assert report.user_id == author.id
    assert post.state == "removed" and post.deleted_at is not None
    assert fanned == 0
    # The bytes stay in the private quarantine for review, never delivered.
    upload_uuid = decode_global_id(upload_id, "MediaUpload", "id")
    assert await store.stat_raw(raw_key(upload_uuid)) is not None
    assert await process_post_media(engine, post_id, media, counter_shards=16) == "skipped"


class Unreachable:
    """The real store, with its downloads failing as a storage outage does."""

    def __init__(self, store) -> None:
        self.store = store

    def __getattr__(self, name):
        return getattr(self.store, name)

    async def download_raw(self, key, dest, *, max_bytes):
        raise ConnectionError("storage unreachable")


async def test_an_unreachable_store_leaves_the_post_processing_for_the_retry(
    gql, client, make_users, engine, settings, store, tmp_path
):
    (author,) = await make_users(1)
    gid, upload_id = await processing_post(
        gql, client, author, jpeg(tmp_path / "c.jpg", 400, 300).read_bytes()
    )
    post_id = decode_global_id(gid, "Post", "id")
    with pytest.raises(ConnectionError):
        await process_post_media(
            engine, post_id, services(Unreachable(store), settings), counter_shards=16
        )
    assert (await post_as_seen(gql, gid, author))["state"] == "PROCESSING"
    upload_uuid = decode_global_id(upload_id, "MediaUpload", "id")
    assert await store.stat_raw(raw_key(upload_uuid)) is not None
    # The retry, with storage back, publishes.
    outcome = await process_post_media(
        engine, post_id, services(store, settings), counter_shards=16
    )
    assert outcome == "published"


@pytest.mark.parametrize("by", ["author", "moderator"])
async def test_deleting_a_post_deletes_its_media_objects(
    gql, client, make_users, engine, settings, store, tmp_path, by
):
    author, mod = await make_users(2)
    gid, upload_id = await processing_post(
        gql, client, author, jpeg(tmp_path / "d.jpg", 500, 400).read_bytes()
    )
    post_id = decode_global_id(gid, "Post", "id")
    media = services(store, settings)
    assert await process_post_media(engine, post_id, media, counter_shards=16) == "published"
    assert delivered(store, post_id)
    if by == "author":
        assert await delete_post(engine, author.id, post_id, counter_shards=16)
    else:
        assert await set_moderator(engine, mod.username, True)
        assert (await remove_post(engine, mod.id, post_id, counter_shards=16)).removed
    assert await delete_post_media(engine, store, post_id) >= 3
    assert delivered(store, post_id) == []
    upload_uuid = decode_global_id(upload_id, "MediaUpload", "id")
    assert await store.stat_raw(raw_key(upload_uuid)) is None


async def test_a_post_deleted_while_processing_is_never_published(
    gql, client, make_users, engine, settings, store, tmp_path
):
    (author,) = await make_users(1)
    gid, upload_id = await processing_post(
        gql, client, author, jpeg(tmp_path / "e.jpg", 500, 400).read_bytes()
    )
    post_id = decode_global_id(gid, "Post", "id")
    assert await delete_post(engine, author.id, post_id, counter_shards=16)
    await delete_post_media(engine, store, post_id)
    upload_uuid = decode_global_id(upload_id, "MediaUpload", "id")
    assert await store.stat_raw(raw_key(upload_uuid)) is None  # its bytes went with it
    media = services(store, settings)
    assert await process_post_media(engine, post_id, media, counter_shards=16) == "skipped"
    assert delivered(store, post_id) == []
    async with engine.connect() as conn:
        count = await conn.scalar(
            text(
                "SELECT coalesce(sum(value), 0) FROM counter_shards WHERE entity_id = :a"
                " AND kind = 'posts'"
            ),
            {"a": author.id},
        )
    assert count == 0  # never counted, never uncounted below zero
