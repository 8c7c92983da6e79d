"""GraphQL and HTTP steps of a post with media: reserve an upload, send its bytes to
the signed target, create the post, read it back."""

from __future__ import annotations

import hashlib
from urllib.parse import urlsplit

import httpx

RESERVE = """mutation($k: MediaKind!, $ct: String!, $n: Int!, $sha: String, $alt: String! = "") {
  createMediaUpload(input: { kind: $k, contentType: $ct, byteSize: $n, sha256: $sha,
                             altText: $alt }) {
    __typename
    ... on CreateMediaUploadSuccess { upload { id url method headers { name value } expiresAt } }
    ... on Error { code message } ... on ValidationError { field } } }"""

CREATE_WITH = """mutation($c: String!, $ids: [ID!]!) {
  createPost(input: { caption: $c, uploadIds: $ids }) {
    __typename
    ... on CreatePostSuccess { post { id state failureReason media { kind } } }
    ... on Error { code message }
    ... on ValidationError { field }
    ... on UploadUnusableError { index reason }
    ... on UploadNotFoundError { index } } }"""

POST_MEDIA = """query($id: ID!) { node(id: $id) { ... on Post { id state failureReason caption
  media { url kind mimeType width height blurhash altText durationSeconds
          poster { name url }
          variants { name url width height mimeType } } } } }"""


async def reserve(
    gql, user, data: bytes, content_type: str = "image/jpeg", kind: str = "IMAGE", **extra
) -> dict:
    """Reserve an upload for ``data``; return the ``upload`` (asserts success)."""
    variables = {
        "k": kind,
        "ct": content_type,
        "n": len(data),
        "sha": hashlib.sha256(data).hexdigest(),
        **extra,
    }
    out = await gql(RESERVE, variables, token=user.token)
    assert "errors" not in out, out
    result = out["data"]["createMediaUpload"]
    assert result["__typename"] == "CreateMediaUploadSuccess", result
    return result["upload"]


async def send(client: httpx.AsyncClient, upload: dict, data: bytes) -> httpx.Response:
    """Send ``data`` as the upload's target says (no Roost token), to the app under test:
    the target URL's path and query on ``client``."""
    parts = urlsplit(upload["url"])
    headers = {h["name"]: h["value"] for h in upload["headers"]}
    return await client.request(
        upload["method"], f"{parts.path}?{parts.query}", content=data, headers=headers
    )


async def upload(gql, client, user, data: bytes, content_type: str = "image/jpeg", **kw) -> str:
    """Reserve and send; return the upload id."""
    target = await reserve(gql, user, data, content_type, **kw)
    sent = await send(client, target, data)
    assert sent.status_code in (200, 201, 204), (sent.status_code, sent.text)
    return target["id"]


async def create_with(gql, user, ids: list[str], caption: str = "") -> dict:
    """createPost with ``uploadIds``; return the result member."""
    out = await gql(CREATE_WITH, {"c": caption, "ids": ids}, token=user.token)
    assert "errors" not in out, out
    return out["data"]["createPost"]


async def post_as_seen(gql, post_gid: str, viewer=None) -> dict | None:
    """The post as ``viewer`` (None: anonymous) reads it by id."""
    out = await gql(POST_MEDIA, {"id": post_gid}, token=viewer.token if viewer else None)
    assert "errors" not in out, out
    return out["data"]["node"]
