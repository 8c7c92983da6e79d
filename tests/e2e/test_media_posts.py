"""Posts with uploaded media, end to end against real PostgreSQL, Redis, the arq worker
and the local object store behind Roost's own upload endpoint: reserve, send the bytes,
create the post (PROCESSING, its author's only), the media worker publishes it (then it
is fanned out and counted once), the variants are fetched; refused bytes fail the post
with a reason and a notification, never half-published."""

from __future__ import annotations

import io
import uuid
from urllib.parse import urlsplit

import pytest
from PIL import Image
from redis.asyncio import Redis
from sqlalchemy import text

from adapters.storage.local import LocalObjectStore
from app.container import build_object_store
from domain.realtime import user_channel
from schema.ids import decode_global_id
from tests.support.documents import FEED, FOLLOW, LIKE
from tests.support.media_files import jpeg, png_bomb, video
from tests.support.media_posts import create_with, post_as_seen, upload
from tests.support.subscriptions import PROTOCOLS, live, local_server
from tests.support.ws import WSClient

NOTIFICATIONS = """query { viewer { notifications(first: 10) { edges { node {
  kind post { id state failureReason } } } } } }"""
USER_POSTS = """query($u: String!) { user(username: $u) { postCount
  posts(first: 10) { edges { node { id state } } } } }"""


def jpeg_bytes(tmp_path, width=1600, height=1200, **kw) -> bytes:
    return jpeg(tmp_path / f"{uuid.uuid4().hex}.jpg", width, height, **kw).read_bytes()


async def feed_ids(gql, user) -> list[str]:
    out = await gql(FEED, {"first": 20, "after": None}, token=user.token)
    assert "errors" not in out, out
    return [e["node"]["id"] for e in out["data"]["viewer"]["feed"]["edges"]]


async def fanouts(engine, post_gid: str) -> int:
    """How many times the post's fan-out finished (the feed consumer's done marker)."""
    post_id = decode_global_id(post_gid, "Post", "id")
    async with engine.connect() as conn:
        return await conn.scalar(
            text(
                "SELECT count(*) FROM outbox o JOIN outbox_consumers c ON c.event_id = o.id"
                " WHERE o.topic = 'post.created' AND o.payload->>'post_id' = :p"
                " AND c.consumer = 'feed' AND c.outcome = 'done'"
            ),
            {"p": str(post_id)},
        )


async def test_a_photo_post_is_processed_published_fanned_out_and_served(
    gql, client, make_users, worker, settings, engine, tmp_path
):
    author, fan = await make_users(2)
    assert "errors" not in await gql(FOLLOW, {"id": author.gid}, token=fan.token)
    data = jpeg_bytes(tmp_path, orientation=6)  # EXIF: rotate 90° (and GPS in it)
    upload_id = await upload(gql, client, author, data, alt="a red corner, a blue sea")
    created = await create_with(gql, author, [upload_id], "sunset #media")
    assert created["__typename"] == "CreatePostSuccess", created
    post = created["post"]
    assert (post["state"], post["media"]) == ("PROCESSING", [])
    gid = post["id"]

    # Processing: its author sees it with its state; nobody else does, anywhere.
    seen = await post_as_seen(gql, gid, author)
    assert seen is not None and seen["state"] in ("PROCESSING", "PUBLISHED")

    await worker.drain()
    seen = await post_as_seen(gql, gid, fan)
    assert seen is not None, "published: followers see it"
    assert seen["state"] == "PUBLISHED" and seen["failureReason"] is None
    (media,) = seen["media"]
    assert media["kind"] == "IMAGE" and media["mimeType"] == "image/jpeg"
    assert (media["width"], media["height"]) == (1200, 1600)  # the EXIF rotation applied
    assert media["altText"] == "a red corner, a blue sea"
    assert media["blurhash"]
    names = {v["name"]: v for v in media["variants"]}
    assert {"thumbnail", "feed", "full"} <= set(names)
    assert (names["thumbnail"]["width"], names["thumbnail"]["height"]) == (150, 150)
    assert names["feed"]["width"] == 1080
    assert names["full"]["width"] == 1200  # 1440 wide at most, never upscaled
    assert media["url"] == names["full"]["url"]
    public = settings.media_public_base_url or settings.api_origin
    for v in media["variants"]:
        assert v["url"].startswith(public + "/media/"), v["url"]
        got = await client.get(urlsplit(v["url"]).path)
        assert got.status_code == 200, (v, got.status_code)
        assert got.headers["content-type"].startswith(v["mimeType"])
        image = Image.open(io.BytesIO(got.content))
        assert image.size == (v["width"], v["height"])
        assert not image.getexif(), "no metadata in a published variant"

    # Fanned out and counted once; the author is told; the raw upload is gone.
    assert gid in await feed_ids(gql, fan)
    assert await fanouts(engine, gid) == 1
    mine = (await gql(USER_POSTS, {"u": author.username}, token=fan.token))["data"]["user"]
    assert mine["postCount"] == 1 and [e["node"]["id"] for e in mine["posts"]["edges"]] == [gid]
    notes = (await gql(NOTIFICATIONS, token=author.token))["data"]["viewer"]["notifications"]
    kinds = [(e["node"]["kind"], (e["node"]["post"] or {}).get("id")) for e in notes["edges"]]
    assert ("POST_PUBLISHED", gid) in kinds
    store = build_object_store(settings)
    upload_uuid = decode_global_id(upload_id, "MediaUpload", "id")
    assert await store.stat_raw(f"raw/{upload_uuid}") is None
    liked = await gql(LIKE, {"id": gid}, token=fan.token)
    assert liked["data"]["likePost"]["__typename"] == "LikePostSuccess"


async def test_a_processing_post_shows_to_its_author_only_on_every_path(
    gql, client, make_users, worker, engine, tmp_path
):
    author, fan = await make_users(2)
    assert "errors" not in await gql(FOLLOW, {"id": author.gid}, token=fan.token)
    await worker.stop()  # hold the post in PROCESSING
    try:
        upload_id = await upload(gql, client, author, jpeg_bytes(tmp_path, 320, 240))
        tag = f"held{uuid.uuid4().hex[:8]}"
        created = await create_with(gql, author, [upload_id], f"wait for it #{tag}")
        gid = created["post"]["id"]
        assert (await post_as_seen(gql, gid, author))["state"] == "PROCESSING"
        assert await post_as_seen(gql, gid, fan) is None
        assert await post_as_seen(gql, gid) is None
        nodes = await gql(
            "query($ids: [ID!]!) { nodes(ids: $ids) { id } }", {"ids": [gid]}, token=fan.token
        )
        assert nodes["data"]["nodes"] == [None]
        posts = await gql(USER_POSTS, {"u": author.username}, token=fan.token)
        assert posts["data"]["user"] == {"postCount": 0, "posts": {"edges": []}}
        own = await gql(USER_POSTS, {"u": author.username}, token=author.token)
        assert own["data"]["user"]["posts"]["edges"] == [
            {"node": {"id": gid, "state": "PROCESSING"}}
        ]
        assert own["data"]["user"]["postCount"] == 0  # counted once published
        tagged = await gql(
            "query($t: String!) { hashtag(name: $t) { posts(first: 5) { edges { node { id } } } } "
            "}",
            {"t": tag},
            token=fan.token,
        )
        assert tagged["data"]["hashtag"]["posts"]["edges"] == []
        for viewer in (fan, author):
            liked = await gql(LIKE, {"id": gid}, token=viewer.token)
            assert liked["data"]["likePost"]["__typename"] == "NotFoundError", liked
        commented = await gql(
            """mutation($id: ID!) { addComment(input: { postId: $id, body: "first" }) {
              __typename } }""",
            {"id": gid},
            token=author.token,
        )
        assert commented["data"]["addComment"]["__typename"] == "NotFoundError"
    finally:
        await worker.start()
    await worker.drain()
    assert (await post_as_seen(gql, gid, fan))["state"] == "PUBLISHED"
    assert gid in await feed_ids(gql, fan)


async def test_refused_bytes_fail_the_post_with_a_reason_and_tell_the_author(
    gql, client, make_users, worker, engine, settings, tmp_path
):
    author, fan = await make_users(2)
    assert "errors" not in await gql(FOLLOW, {"id": author.gid}, token=fan.token)
    good = jpeg_bytes(tmp_path, 640, 480)
    truncated = good[: len(good) // 2]
    bomb = png_bomb(tmp_path / "bomb.png").read_bytes()
    cases = {
        "truncated": (truncated, "image/jpeg"),
        "bomb": (bomb, "image/png"),
        "not an image": (b"<?php echo 'hi'; ?>" * 50, "image/jpeg"),
    }
    gids = {}
    for name, (data, ct) in cases.items():
        upload_id = await upload(gql, client, author, data, ct)
        created = await create_with(gql, author, [upload_id], name)
        assert created["__typename"] == "CreatePostSuccess", created
        gids[name] = created["post"]["id"]
    await worker.drain()
    store = build_object_store(settings)
    assert isinstance(store, LocalObjectStore)
    for name, gid in gids.items():
        seen = await post_as_seen(gql, gid, author)
        assert seen["state"] == "FAILED", (name, seen)
        assert seen["failureReason"] and seen["media"] == [], (name, seen)
        assert await post_as_seen(gql, gid, fan) is None
        post_id = decode_global_id(gid, "Post", "id")
        assert not list((store.root / "delivery" / "media").glob(f"{post_id}/**/*.*"))
        assert await fanouts(engine, gid) == 0
    notes = (await gql(NOTIFICATIONS, token=author.token))["data"]["viewer"]["notifications"]
    failed = {e["node"]["post"]["id"] for e in notes["edges"] if e["node"]["kind"] == "POST_FAILED"}
    assert failed == set(gids.values())
    assert not set(gids.values()) & set(await feed_ids(gql, fan))
    async with engine.connect() as conn:
        reasons = await conn.execute(
            text("SELECT failure_reason FROM uploads WHERE post_id = ANY(CAST(:p AS uuid[]))"),
            {"p": [decode_global_id(g, "Post", "id") for g in gids.values()]},
        )
        assert {r[0] for r in reasons} <= {"TRUNCATED", "TOO_MANY_PIXELS", "UNSUPPORTED_TYPE"}


MEDIA_NOTIFICATIONS = """subscription { notificationAdded { kind post { id state
  failureReason media { variants { name } } } } }"""


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_the_author_learns_over_a_subscription_that_processing_finished(
    gql, client, make_users, worker, settings, engine, tmp_path, protocol
):
    (author,) = await make_users(1)
    redis = Redis.from_url(settings.redis_url)
    async with local_server(settings, engine) as (_, url):
        ws = await WSClient.open(url, protocol, author.token)
        try:
            await ws.subscribe(MEDIA_NOTIFICATIONS)
            await live(redis, user_channel(author.id))
            good = await upload(gql, client, author, jpeg_bytes(tmp_path, 400, 300))
            ok = (await create_with(gql, author, [good], "watch me"))["post"]["id"]
            got = (await ws.next())["data"]["notificationAdded"]
            assert got["kind"] == "POST_PUBLISHED" and got["post"]["id"] == ok
            assert got["post"]["state"] == "PUBLISHED"
            assert {"thumbnail", "feed", "full"} <= {
                v["name"] for v in got["post"]["media"][0]["variants"]
            }
            bad = await upload(
                gql, client, author, b"\x89PNG\r\n\x1a\nnot really" * 10, "image/png"
            )
            failed = (await create_with(gql, author, [bad], "broken"))["post"]["id"]
            got = (await ws.next())["data"]["notificationAdded"]
            assert got["kind"] == "POST_FAILED" and got["post"]["id"] == failed
            assert got["post"]["state"] == "FAILED" and got["post"]["failureReason"]
        finally:
            await ws.close()
            await redis.aclose()


async def test_a_video_post_publishes_its_transcode_and_poster_and_a_long_one_fails(
    gql, client, make_users, worker, tmp_path
):
    (author,) = await make_users(1)
    clip = video(tmp_path / "clip.mp4", seconds=2, width=320, height=240).read_bytes()
    long = video(tmp_path / "long.mp4", seconds=61, width=64, height=48, fps=2).read_bytes()
    ok = await upload(gql, client, author, clip, "video/mp4", kind="VIDEO")
    too_long = await upload(gql, client, author, long, "video/mp4", kind="VIDEO")
    ok_post = (await create_with(gql, author, [ok], "a clip"))["post"]["id"]
    long_post = (await create_with(gql, author, [too_long], "a long one"))["post"]["id"]
    await worker.drain()
    seen = await post_as_seen(gql, ok_post, author)
    assert seen["state"] == "PUBLISHED", seen
    (media,) = seen["media"]
    assert media["kind"] == "VIDEO" and media["mimeType"] in ("video/mp4", "video/quicktime")
    assert 1.5 <= media["durationSeconds"] <= 2.5
    assert media["poster"] is not None
    assert media["url"].endswith(".mp4")
    got = await client.get(urlsplit(media["url"]).path, headers={"Range": "bytes=0-99"})
    assert got.status_code == 206 and len(got.content) == 100
    failed = await post_as_seen(gql, long_post, author)
    assert failed["state"] == "FAILED" and failed["failureReason"], failed
