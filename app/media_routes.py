"""The HTTP side of the local object store (docs/operations/media-storage.md "Media
storage"): ``PUT /uploads/<key>?…`` checks signature, expiry, type and size before a byte
is read and cuts the body off past its size or time; ``GET|HEAD /media/<path>`` serves
delivery objects (never quarantine) with immutable caching, ETags and byte ranges."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, MalformedRangeHeader, Response
from starlette.routing import Route

from adapters.storage.keys import normalized_content_type
from adapters.storage.local import LocalObjectStore, UploadRefusedError, UploadTooLargeError

log = logging.getLogger("roost.media")

#: Bytes a second an upload must average (beyond MEDIA_UPLOAD_IDLE_TIMEOUT_S): 16 KiB/s,
#: a 100 MB video may take 100 minutes.
MIN_UPLOAD_RATE = 16 * 1024

IMMUTABLE = "public, max-age=31536000, immutable"

_REFUSALS: dict[str, tuple[int, str, str]] = {
    "bad": (400, "BAD_REQUEST", "The upload URL is malformed: use the URL createMediaUpload gave."),
    "forged": (403, "FORBIDDEN", "The upload URL's signature is not valid."),
    "expired": (410, "LINK_EXPIRED", "The upload URL has expired: reserve a new upload."),
    "exists": (409, "UPLOAD_EXISTS", "These bytes were uploaded already; an upload is sent once."),
    "type": (
        415,
        "UNSUPPORTED_MEDIA_TYPE",
        "Content-Type must be the one the upload was reserved with.",
    ),
    "length": (411, "LENGTH_REQUIRED", "Send Content-Length: the upload's byte size."),
    "large": (413, "PAYLOAD_TOO_LARGE", "The body is larger than the upload's byte size."),
    "small": (400, "UPLOAD_INCOMPLETE", "The body is smaller than the upload's byte size."),
    "idle": (408, "UPLOAD_TIMEOUT", "The body stopped arriving (or crawled); send it again."),
    "storage": (
        503,
        "SERVICE_UNAVAILABLE",
        "The upload could not be stored right now; send it again later.",
    ),
}


def _refuse(why: str, *, close: bool = False) -> Response:
    status, code, message = _REFUSALS[why]
    headers = {"Cache-Control": "no-store"}
    if close:  # the rest of the body is not read: the connection cannot be reused
        headers["Connection"] = "close"
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=headers
    )


def media_routes(store: LocalObjectStore, *, idle_timeout_s: float) -> list[Route]:
    """The two routes of this module on ``store``."""
    return [
        Route("/uploads/{key:path}", upload_endpoint(store, idle_timeout_s), methods=["PUT"]),
        Route("/media/{path:path}", media_endpoint(store), methods=["GET", "HEAD"]),
    ]


def upload_endpoint(
    store: LocalObjectStore, idle_timeout_s: float
) -> Callable[[Request], Awaitable[Response]]:
    """``PUT /uploads/<key>`` (module docstring)."""

    async def upload(request: Request) -> Response:
        key = request.path_params["key"]
        try:
            grant = store.check_upload(key, request.query_params)
        except UploadRefusedError as exc:
            return _refuse(exc.reason, close=True)
        sent_type = normalized_content_type(request.headers.get("content-type", ""))
        if sent_type != grant.content_type:
            return _refuse("type", close=True)
        length = request.headers.get("content-length")
        if length is None or not length.isdigit() or "transfer-encoding" in request.headers:
            return _refuse("length", close=True)
        if int(length) > grant.size:
            return _refuse("large", close=True)
        if int(length) < grant.size:
            return _refuse("small", close=True)
        try:
            receiver = store.begin_upload(grant)
        except UploadRefusedError as exc:
            return _refuse(exc.reason, close=True)
        loop = asyncio.get_running_loop()
        # A drip-fed body is cut off too: a connection is held in proportion to its size.
        deadline = loop.time() + idle_timeout_s + grant.size / MIN_UPLOAD_RATE
        try:
            while True:
                try:
                    wait = min(idle_timeout_s, deadline - loop.time())
                    async with asyncio.timeout(max(wait, 0)):
                        message = await request.receive()
                except TimeoutError:
                    await receiver.discard()
                    return _refuse("idle", close=True)
                if message["type"] == "http.disconnect":
                    await receiver.discard()
                    return Response(status_code=400)  # nobody reads it
                await receiver.write(message.get("body", b""))
                if not message.get("more_body", False):
                    break
        except UploadTooLargeError:
            await receiver.discard()
            return _refuse("large", close=True)
        except OSError:  # the disk is full or failing
            log.exception("an upload could not be written to %s", store.root)
            await receiver.discard()
            return _refuse("storage", close=True)
        except BaseException:
            await asyncio.shield(receiver.discard())
            raise
        try:
            await receiver.commit()
        except UploadRefusedError as exc:
            return _refuse(exc.reason)
        except ValueError:
            return _refuse("small")
        except OSError:
            log.exception("an upload could not be written to %s", store.root)
            return _refuse("storage")
        return JSONResponse(
            {"key": grant.key, "size": grant.size},
            status_code=201,
            headers={"Cache-Control": "no-store"},
        )

    return upload


class _MediaFile(FileResponse):
    """Starlette's FileResponse, answering the whole file for a ``Range`` it cannot
    parse instead of a plain-text 400."""

    @classmethod
    def _parse_range_header(cls, http_range: str, file_size: int) -> list[tuple[int, int]]:
        try:
            return super()._parse_range_header(http_range, file_size)
        except MalformedRangeHeader:
            return []


def media_endpoint(store: LocalObjectStore) -> Callable[[Request], Awaitable[Response]]:
    """``GET|HEAD /media/<path>`` (module docstring)."""

    async def media(request: Request) -> Response:
        found = await asyncio.to_thread(store.delivery_file, "media/" + request.path_params["path"])
        if found is None:
            return JSONResponse(
                {"error": {"code": "NOT_FOUND", "message": "No such media."}},
                status_code=404,
                headers={"Cache-Control": "no-store"},
            )
        st = found.stat
        tag = hashlib.sha256(f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()
        etag = f'"{tag[:32]}"'
        headers = {"Cache-Control": IMMUTABLE, "ETag": etag}
        if etag in (t.strip() for t in request.headers.get("if-none-match", "").split(",")):
            return Response(status_code=304, headers=headers)
        return _MediaFile(
            found.path, headers=headers, media_type=found.content_type, stat_result=st
        )

    return media
