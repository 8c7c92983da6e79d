"""Profiles over GraphQL: an avatar uploaded through the media pipeline (reserve, send the
bytes, updateProfile names the upload, the media worker makes centred squares), shown
wherever a User is (feed, comments, notifications) at no extra statement; refused bytes
leave the avatar as it was and say why; a website link of http(s) only."""

from __future__ import annotations

import asyncio
import io
import uuid
from urllib.parse import urlsplit

import pytest
from PIL import Image

from schema.ids import to_global_id
from tests.support.actions import follow_all, post
from tests.support.checks import measured
from tests.support.documents import COMMENT
from tests.support.media_files import jpeg, video
from tests.support.media_posts import create_with, reserve, upload

PROFILE = """mutation($a: ID, $w: String) { updateProfile(input: { avatarUploadId: $a,
  website: $w }) { __typename
  ... on UpdateProfileSuccess { user { website avatar { url } } }
  ... on Error { code message } ... on ValidationError { field }
  ... on UploadUnusableError { index reason } ... on UploadNotFoundError { index } } }"""
SET_AVATAR = """mutation($a: ID) { updateProfile(input: { avatarUploadId: $a }) { __typename
  ... on Error { code message } ... on ValidationError { field }
  ... on UploadUnusableError { index reason } ... on UploadNotFoundError { index } } }"""
SET_WEBSITE = """mutation($w: String!) { updateProfile(input: { website: $w }) { __typename
  ... on UpdateProfileSuccess { user { website } }
  ... on Error { code message } ... on ValidationError { field } } }"""
ME = """{ viewer { website avatar { url blurhash variants { name url width height mimeType } }
  pendingAvatar { uploadId status failureReason } } }"""
USER = """query($u: String!) { user(username: $u) { website avatar { url } } }"""
FEED_AUTHORS = """query($n: Int!) { viewer { feed(first: $n) { edges { node {
  author { username avatar { url } } } } } } }"""
FEED_PLAIN = """query($n: Int!) { viewer { feed(first: $n) { edges { node {
  author { username } } } } } }"""
COMMENTS = """query($id: ID!) { node(id: $id) { ... on Post { comments(first: 10) {
  edges { node { author { username avatar { url } } } } } } } }"""
NOTICES = """{ viewer { notifications(first: 10) { edges { node { kind
  actor { username avatar { url } } } } } } }"""
FOLLOWERS = """query($u: String!, $with: Boolean!) { user(username: $u) {
  followers(first: 50) { edges { node { username avatar @include(if: $with) { url } } } } } }"""


def jpeg_bytes(tmp_path, width: int, height: int, **kw) -> bytes:
    return jpeg(tmp_path / f"{uuid.uuid4().hex}.jpg", width, height, **kw).read_bytes()


async def me(gql, user) -> dict:
    out = await gql(ME, token=user.token)
    assert "errors" not in out, out
    return out["data"]["viewer"]


async def set_avatar(gql, user, upload_id: str | None) -> dict:
    out = await gql(SET_AVATAR, {"a": upload_id}, token=user.token)
    assert "errors" not in out, out
    return out["data"]["updateProfile"]


async def fetch(client, url: str):
    return await client.get(urlsplit(url).path)


async def test_an_avatar_becomes_centred_squares_shown_wherever_the_user_is(
    gql, client, make_users, worker, tmp_path
):
    author, fan = await make_users(2)
    await follow_all(gql, [fan], author)
    photo = await upload(gql, client, author, jpeg_bytes(tmp_path, 400, 300, orientation=6))
    assert (await set_avatar(gql, author, photo))["__typename"] == "UpdateProfileSuccess"
    await worker.drain()

    mine = await me(gql, author)
    assert mine["pendingAvatar"] is None
    avatar = mine["avatar"]
    sizes = {v["name"]: (v["width"], v["height"], v["mimeType"]) for v in avatar["variants"]}
    # EXIF orientation 6: 300 × 400 upright; the squares are cut from its centre
    assert sizes == {
        "avatar_320": (300, 300, "image/webp"),
        "avatar_320_jpeg": (300, 300, "image/jpeg"),
        "avatar_150": (150, 150, "image/webp"),
        "avatar_150_jpeg": (150, 150, "image/jpeg"),
        "avatar_64": (64, 64, "image/webp"),
        "avatar_64_jpeg": (64, 64, "image/jpeg"),
    }
    assert avatar["blurhash"]
    got = await fetch(client, avatar["url"])
    assert (got.status_code, got.headers["content-type"]) == (200, "image/webp")
    assert Image.open(io.BytesIO(got.content)).size == (150, 150)

    # everywhere a User is rendered: profile, feed, comments, notifications
    url = avatar["url"]
    seen = (await gql(USER, {"u": author.username}))["data"]["user"]
    assert seen["avatar"] == {"url": url}
    pid = await post(gql, author, "with a face")
    await worker.drain()
    feed = (await gql(FEED_AUTHORS, {"n": 5}, token=fan.token))["data"]["viewer"]["feed"]
    assert feed["edges"][0]["node"]["author"] == {
        "username": author.username,
        "avatar": {"url": url},
    }
    fan_post = await post(gql, fan, "comment here")
    await gql(COMMENT, {"id": fan_post, "body": "hi"}, token=author.token)
    comments = (await gql(COMMENTS, {"id": fan_post}, token=fan.token))["data"]["node"]
    assert comments["comments"]["edges"][0]["node"]["author"]["avatar"] == {"url": url}
    await worker.drain()
    notices = (await gql(NOTICES, token=fan.token))["data"]["viewer"]["notifications"]["edges"]
    assert [n["node"]["actor"]["avatar"] for n in notices if n["node"]["kind"] == "COMMENT"] == [
        {"url": url}
    ]
    assert pid

    # a new avatar replaces the old one, whose objects go; null removes it
    second = await upload(gql, client, author, jpeg_bytes(tmp_path, 100, 100, seed=2))
    await set_avatar(gql, author, second)
    await worker.drain()
    new_url = (await me(gql, author))["avatar"]["url"]
    assert new_url != url and (await fetch(client, url)).status_code == 404
    small = {v["name"]: v["width"] for v in (await me(gql, author))["avatar"]["variants"]}
    assert small["avatar_320"] == 100  # never upscaled
    assert (await set_avatar(gql, author, None))["__typename"] == "UpdateProfileSuccess"
    assert (await me(gql, author))["avatar"] is None
    assert (await fetch(client, new_url)).status_code == 404


async def test_an_avatar_that_is_not_an_image_or_lies_about_its_type_is_refused(
    gql, client, make_users, worker, tmp_path
):
    owner, other = await make_users(2)
    good = await upload(gql, client, owner, jpeg_bytes(tmp_path, 200, 200))
    await set_avatar(gql, owner, good)
    await worker.drain()
    before = (await me(gql, owner))["avatar"]
    assert before is not None

    # bytes that are no picture at all, declared as a JPEG
    text_file = await upload(gql, client, owner, b"<svg onload=alert(1)>" + b"x" * 200)
    assert (await set_avatar(gql, owner, text_file))["__typename"] == "UpdateProfileSuccess"
    await worker.drain()
    mine = await me(gql, owner)
    assert mine["avatar"] == before  # unchanged
    assert mine["pendingAvatar"] == {
        "uploadId": text_file,
        "status": "FAILED",
        "failureReason": "UNSUPPORTED_TYPE",
    }
    # a video that says it is a JPEG image
    clip = video(tmp_path / "clip.mp4", seconds=1).read_bytes()
    liar = await upload(gql, client, owner, clip, "image/jpeg")
    await set_avatar(gql, owner, liar)
    await worker.drain()
    mine = await me(gql, owner)
    assert mine["avatar"] == before
    assert (mine["pendingAvatar"]["status"], mine["pendingAvatar"]["failureReason"]) == (
        "FAILED",
        "KIND_MISMATCH",
    )

    # refused at once: a video upload, someone else's, one never sent, a used one, a Post id
    honest_video = await upload(gql, client, owner, clip, "video/mp4", kind="VIDEO")
    out = await set_avatar(gql, owner, honest_video)
    assert (out["__typename"], out["field"]) == ("ValidationError", "avatarUploadId")
    theirs = await upload(gql, client, other, jpeg_bytes(tmp_path, 80, 80))
    out = await set_avatar(gql, owner, theirs)
    assert (out["__typename"], out["index"]) == ("UploadNotFoundError", 0)
    unsent = await reserve(gql, owner, b"\xff\xd8" * 50)
    out = await set_avatar(gql, owner, unsent["id"])
    assert (out["__typename"], out["reason"]) == ("UploadUnusableError", "NOT_UPLOADED")
    out = await set_avatar(gql, owner, good)
    assert (out["__typename"], out["reason"]) == ("UploadUnusableError", "USED")
    out = await set_avatar(gql, owner, to_global_id("Post", uuid.uuid4()))
    assert (out["__typename"], out["field"]) == ("ValidationError", "avatarUploadId")
    assert (await me(gql, owner))["avatar"] == before


@pytest.mark.parametrize(
    "bad",
    [
        "javascript:alert(1)",
        "JavaScript://example.com/%0aalert(1)",
        "data:text/html,<b>hi</b>",
        "ftp://example.com/",
        "https://user:secret@example.com/",
        "https://127.0.0.1/admin",
        "http://localhost:8000/",
        "https://exa mple.com/",
        "https://example.com/\x00",
        "example.com",
        "https://" + "a" * 190 + ".com/",
    ],
)
async def test_a_website_with_a_bad_scheme_or_shape_is_refused(gql, make_users, bad):
    (user,) = await make_users(1)
    ok = await gql(SET_WEBSITE, {"w": "https://Example.com/me"}, token=user.token)
    assert ok["data"]["updateProfile"]["user"] == {"website": "https://example.com/me"}
    out = (await gql(SET_WEBSITE, {"w": bad}, token=user.token))["data"]["updateProfile"]
    assert (out["__typename"], out["code"], out["field"]) == (
        "ValidationError",
        "VALIDATION_FAILED",
        "website",
    ), bad
    seen = (await gql(USER, {"u": user.username}))["data"]["user"]
    assert seen["website"] == "https://example.com/me"  # unchanged


async def test_a_website_is_shown_to_everyone_and_an_empty_one_clears_it(gql, make_users):
    user, reader = await make_users(2)
    out = await gql(PROFILE, {"w": "http://blog.example.org/a?b=1#c"}, token=user.token)
    assert out["data"]["updateProfile"]["user"]["website"] == "http://blog.example.org/a?b=1#c"
    seen = (await gql(USER, {"u": user.username}, token=reader.token))["data"]["user"]
    assert seen["website"] == "http://blog.example.org/a?b=1#c"
    out = await gql(SET_WEBSITE, {"w": "  "}, token=user.token)
    assert out["data"]["updateProfile"]["user"] == {"website": None}


async def test_avatars_cost_no_statement_in_feeds_and_lists(
    gql, client, make_users, worker, engine, tmp_path
):
    (fan,) = await make_users(1)
    authors = await make_users(6)
    await follow_all(gql, [fan], authors[0])
    for a in authors:
        await follow_all(gql, [a], fan)
        await follow_all(gql, [fan], a)
        photo = await upload(gql, client, a, jpeg_bytes(tmp_path, 64, 64, seed=3))
        await set_avatar(gql, a, photo)
        await post(gql, a, f"by {a.username}")
    await worker.drain()
    with_avatars, many = await measured(gql, engine, FEED_AUTHORS, {"n": 6}, fan.token)
    _, plain = await measured(gql, engine, FEED_PLAIN, {"n": 6}, fan.token)
    edges = with_avatars["viewer"]["feed"]["edges"]
    assert len(edges) == 6 and all(e["node"]["author"]["avatar"] for e in edges)
    print(f"feed page of 6: {len(plain)} statements, {len(many)} with avatars")
    assert len(many) == len(plain)
    followers, listed = await measured(
        gql, engine, FOLLOWERS, {"u": fan.username, "with": True}, fan.token
    )
    _, bare = await measured(gql, engine, FOLLOWERS, {"u": fan.username, "with": False}, fan.token)
    nodes = [e["node"] for e in followers["user"]["followers"]["edges"]]
    assert len(nodes) == 6 and all(n["avatar"] for n in nodes)
    print(f"followers page of 6: {len(bare)} statements, {len(listed)} with avatars")
    assert len(listed) == len(bare)


async def test_one_upload_becomes_an_avatar_or_a_post_never_both(gql, client, make_users, tmp_path):
    (user,) = await make_users(1)
    for seed in range(4):
        photo = await upload(gql, client, user, jpeg_bytes(tmp_path, 64, 64, seed=seed))
        as_avatar, as_post = await asyncio.gather(
            set_avatar(gql, user, photo), create_with(gql, user, [photo], "mine")
        )
        won = [as_avatar["__typename"] == "UpdateProfileSuccess"]
        won.append(as_post["__typename"] == "CreatePostSuccess")
        assert won.count(True) == 1, (as_avatar, as_post)
        loser = as_post if won[0] else as_avatar
        assert (loser["__typename"], loser["reason"]) == ("UploadUnusableError", "USED")
