"""Bad input to the media flow gets a clear typed error and leaves nothing behind:
someone else's upload, one used twice (also by two concurrent posts), an expired one, one
whose bytes never arrived or arrived short, 11 uploads, a size over the limit, unknown
content types, external URLs off the allow-list. Real PostgreSQL and the local store
behind Roost's own upload endpoint."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import text

from schema.ids import decode_global_id, to_global_id
from tests.support.media_files import jpeg
from tests.support.media_posts import RESERVE, create_with, reserve, send, upload

URL_POST = """mutation($url: String!) { createPost(input: { caption: "x",
  media: [{ url: $url, kind: IMAGE }] }) { __typename
  ... on MediaUrlNotAllowedError { code url } ... on ValidationError { code field } } }"""


@pytest.fixture
def photo(tmp_path) -> bytes:
    return jpeg(tmp_path / "p.jpg", 200, 150).read_bytes()


async def posts_of(engine, user) -> int:
    async with engine.connect() as conn:
        return await conn.scalar(
            text("SELECT count(*) FROM posts WHERE author_id = :u"), {"u": user.id}
        )


async def test_someone_elses_upload_is_not_found_and_nothing_is_written(
    gql, client, make_users, engine, photo
):
    owner, thief = await make_users(2)
    theirs = await upload(gql, client, owner, photo)
    out = await create_with(gql, thief, [theirs], "mine now")
    assert out["__typename"] == "UploadNotFoundError", out
    assert (out["code"], out["index"]) == ("UPLOAD_NOT_FOUND", 0)
    # An id that is no upload at all reads the same; one of another type is invalid.
    missing = await create_with(gql, thief, [to_global_id("MediaUpload", uuid.uuid4())])
    assert missing["__typename"] == "UploadNotFoundError"
    wrong = await create_with(gql, thief, [to_global_id("Post", uuid.uuid4())])
    assert (wrong["__typename"], wrong["field"]) == ("ValidationError", "uploadIds")
    assert await posts_of(engine, thief) == 0
    # The owner's upload is untouched: still theirs to post.
    ok = await create_with(gql, owner, [theirs], "really mine")
    assert ok["__typename"] == "CreatePostSuccess"


async def test_an_upload_goes_into_one_post_only_even_concurrently(
    gql, client, make_users, engine, photo
):
    (author,) = await make_users(1)
    first = await upload(gql, client, author, photo)
    assert (await create_with(gql, author, [first], "one"))["__typename"] == "CreatePostSuccess"
    again = await create_with(gql, author, [first], "two")
    assert (again["__typename"], again["reason"], again["index"]) == (
        "UploadUnusableError",
        "USED",
        0,
    )
    twice = await upload(gql, client, author, photo)
    dup = await create_with(gql, author, [twice, twice], "twice")
    assert (dup["__typename"], dup["reason"], dup["index"]) == ("UploadUnusableError", "USED", 1)
    # Eight posts race for one upload: exactly one gets it.
    contested = await upload(gql, client, author, photo)
    before = await posts_of(engine, author)
    results = await asyncio.gather(
        *(create_with(gql, author, [contested], f"race {i}") for i in range(8))
    )
    kinds = sorted(r["__typename"] for r in results)
    assert kinds == ["CreatePostSuccess"] + ["UploadUnusableError"] * 7, kinds
    assert await posts_of(engine, author) == before + 1


async def test_an_expired_upload_and_one_without_its_bytes_are_refused(
    gql, client, make_users, engine, photo
):
    (author,) = await make_users(1)
    expired = await upload(gql, client, author, photo)
    async with engine.begin() as conn:
        await conn.execute(
            text("UPDATE uploads SET expires_at = now() - interval '1 second' WHERE id = :id"),
            {"id": decode_global_id(expired, "MediaUpload", "id")},
        )
    out = await create_with(gql, author, [expired])
    assert (out["__typename"], out["reason"]) == ("UploadUnusableError", "EXPIRED")

    never = await reserve(gql, author, photo)  # reserved, bytes never sent
    out = await create_with(gql, author, [never["id"]], "where is it")
    assert (out["__typename"], out["reason"]) == ("UploadUnusableError", "NOT_UPLOADED")

    # A body shorter than declared is refused by the store, so the upload stays empty.
    short = await reserve(gql, author, photo)
    sent = await send(client, {**short}, photo[:-10])
    assert sent.status_code >= 400
    out = await create_with(gql, author, [short["id"]])
    assert (out["__typename"], out["reason"]) == ("UploadUnusableError", "NOT_UPLOADED")
    # and the good one in a list after a bad one: the bad one's index is reported
    good = await upload(gql, client, author, photo)
    out = await create_with(gql, author, [good, never["id"]])
    assert (out["__typename"], out["index"]) == ("UploadUnusableError", 1)
    assert await posts_of(engine, author) == 0
    again = await create_with(gql, author, [good], "the good one still works")
    assert again["__typename"] == "CreatePostSuccess"


async def test_eleven_uploads_are_one_too_many(gql, client, make_users, engine, photo):
    (author,) = await make_users(1)
    ids = [await upload(gql, client, author, photo) for _ in range(11)]
    out = await create_with(gql, author, ids, "too many")
    assert (out["__typename"], out["field"]) == ("ValidationError", "uploadIds")
    assert await posts_of(engine, author) == 0
    ten = await create_with(gql, author, ids[:10], "ten is fine")
    assert ten["__typename"] == "CreatePostSuccess"
    # A huge list is refused before any id is decoded.
    many = [to_global_id("MediaUpload", uuid.uuid4()) for _ in range(500)]
    out = await create_with(gql, author, many, "")
    assert (out["__typename"], out["field"]) == ("ValidationError", "uploadIds")


@pytest.mark.parametrize(
    ("variables", "field"),
    [
        ({"k": "IMAGE", "ct": "image/jpeg", "n": 31 * 1024 * 1024}, "byteSize"),
        ({"k": "VIDEO", "ct": "video/mp4", "n": 201 * 1024 * 1024}, "byteSize"),
        ({"k": "IMAGE", "ct": "image/jpeg", "n": 0}, "byteSize"),
        ({"k": "IMAGE", "ct": "image/jpeg", "n": -5}, "byteSize"),
        ({"k": "IMAGE", "ct": "image/svg+xml", "n": 100}, "contentType"),
        ({"k": "IMAGE", "ct": "text/html", "n": 100}, "contentType"),
        ({"k": "IMAGE", "ct": "video/mp4", "n": 100}, "contentType"),
        ({"k": "VIDEO", "ct": "image/jpeg", "n": 100}, "contentType"),
        ({"k": "IMAGE", "ct": "image/jpeg\x00", "n": 100}, "contentType"),
        ({"k": "IMAGE", "ct": "image/jpeg", "n": 100, "sha": "nothex"}, "sha256"),
        ({"k": "IMAGE", "ct": "image/jpeg", "n": 100, "alt": "a" * 1001}, "altText"),
    ],
)
async def test_a_bad_reservation_is_a_validation_error(gql, make_users, engine, variables, field):
    (user,) = await make_users(1)
    out = await gql(RESERVE, variables, token=user.token)
    assert "errors" not in out, out
    result = out["data"]["createMediaUpload"]
    assert (result["__typename"], result["field"]) == ("ValidationError", field), result
    async with engine.connect() as conn:
        assert (
            await conn.scalar(
                text("SELECT count(*) FROM uploads WHERE owner_id = :u"), {"u": user.id}
            )
            == 0
        )


async def test_an_unknown_kind_is_refused_by_the_schema(gql, make_users):
    (user,) = await make_users(1)
    out = await gql(RESERVE, {"k": "AUDIO", "ct": "audio/mpeg", "n": 10}, token=user.token)
    assert out["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def test_reserving_needs_a_signed_in_user(gql):
    out = await gql(RESERVE, {"k": "IMAGE", "ct": "image/jpeg", "n": 10})
    assert out["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/x.jpg",
        "https://169.254.169.254/latest/meta-data/x.jpg",
        "https://tracker.example/p.gif?viewer=1",
        "http://example.com/a.jpg",  # an allowed host, but not https
        "https://user:pw@example.com/a.jpg",
        "https://example.com.evil.test/a.jpg",
        "https://localhost/a.jpg",
    ],
)
async def test_external_urls_off_the_allow_list_are_refused(gql, make_users, engine, url):
    (user,) = await make_users(1)
    out = await gql(URL_POST, {"url": url}, token=user.token)
    result = out["data"]["createPost"]
    assert result == {
        "__typename": "MediaUrlNotAllowedError",
        "code": "MEDIA_URL_NOT_ALLOWED",
        "url": url,
    }
    assert await posts_of(engine, user) == 0


async def test_an_allowed_https_host_is_accepted(gql, make_users):
    (user,) = await make_users(1)
    out = await gql(URL_POST, {"url": "https://example.com/a.jpg"}, token=user.token)
    assert out["data"]["createPost"]["__typename"] == "CreatePostSuccess"
