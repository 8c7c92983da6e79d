"""The object store on S3-compatible storage, MEDIA_STORAGE=s3
(docs/operations/media-storage.md "Media storage"). Upload URLs are signed locally on
the public endpoint, so :meth:`S3ObjectStore.presign_upload` is synchronous; the rest
uses one aioboto3 client, opened on first use.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal
from urllib.parse import quote

import aioboto3
import botocore.session
from aiobotocore.config import AioConfig
from botocore.config import Config
from botocore.exceptions import ClientError

from adapters.storage.keys import delivery_key, normalized_content_type, raw_key
from domain.media.ports import StoredObject, UploadTarget

if TYPE_CHECKING:
    from types_aiobotocore_s3 import S3Client

#: Cache-Control of every delivery object (immutable: a new variant gets a new key).
IMMUTABLE = "public, max-age=31536000, immutable"
#: Bytes read from a download stream at a time.
CHUNK_BYTES = 1 << 20
#: Deletions of delivery objects in flight at once.
DELETE_CONCURRENCY = 16
#: SigV4 presigned URLs live at most 7 days.
MAX_PRESIGN_S = 7 * 24 * 3600

_MISSING = frozenset({"404", "NoSuchKey", "NotFound"})


@dataclass(frozen=True, slots=True)
class S3Config:
    """Buckets and endpoints. ``endpoint_url`` None: AWS; ``public_endpoint_url``: where
    clients upload; credentials None: botocore's chain; ``if_none_match``: sign
    ``If-None-Match: *`` (off for a store that rejects it)."""

    quarantine_bucket: str
    delivery_bucket: str
    region: str = "us-east-1"
    endpoint_url: str | None = None
    public_endpoint_url: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    addressing_style: Literal["auto", "path", "virtual"] = "auto"
    public_base_url: str | None = None
    if_none_match: bool = True

    @property
    def delivery_base_url(self) -> str:
        """``public_base_url``, or where the delivery bucket is read from."""
        if self.public_base_url:
            return self.public_base_url.rstrip("/")
        endpoint = self.public_endpoint_url or self.endpoint_url
        if endpoint:
            return f"{endpoint.rstrip('/')}/{self.delivery_bucket}"
        return f"https://{self.delivery_bucket}.s3.{self.region}.amazonaws.com"


class S3ObjectStore:
    """``domain.media.ports.ObjectStore`` on S3-compatible storage."""

    def __init__(self, config: S3Config) -> None:
        self.config = config
        options: dict[str, Any] = {
            "signature_version": "s3v4",
            "s3": {"addressing_style": config.addressing_style},
            "retries": {"max_attempts": 3, "mode": "standard"},
        }
        self._botocore_config = Config(**options)
        self._aio_config = AioConfig(**options)
        self._session = aioboto3.Session(
            aws_access_key_id=config.access_key_id,
            aws_secret_access_key=config.secret_access_key,
            region_name=config.region,
        )
        # Built now: loading botocore's models (~0.1 s) stays off a request's path.
        self._signer: Any = botocore.session.get_session().create_client(
            "s3",
            region_name=config.region,
            endpoint_url=config.public_endpoint_url or config.endpoint_url,
            aws_access_key_id=config.access_key_id,
            aws_secret_access_key=config.secret_access_key,
            config=self._botocore_config,
        )
        self._client: S3Client | None = None
        self._stack = contextlib.AsyncExitStack()
        self._lock = asyncio.Lock()

    async def _s3(self) -> S3Client:
        client = self._client
        if client is None:
            async with self._lock:
                client = self._client
                if client is None:
                    opening = self._session.client(
                        "s3",
                        endpoint_url=self.config.endpoint_url,
                        region_name=self.config.region,
                        config=self._aio_config,
                    )
                    client = await self._stack.enter_async_context(opening)
                    self._client = client
        return client

    async def aclose(self) -> None:
        """Close the client (a later call opens a new one)."""
        self._client = None
        await self._stack.aclose()
        self._stack = contextlib.AsyncExitStack()

    def presign_upload(
        self, key: str, *, content_type: str, byte_size: int, expires_at: dt.datetime
    ) -> UploadTarget:
        """A SigV4 presigned ``PUT`` of ``key`` signing its type, length and
        (``if_none_match``) ``If-None-Match: *``; the client sends the headers returned."""
        raw_key(key)
        ctype = normalized_content_type(content_type)
        if ctype is None:
            raise ValueError(f"not a type/subtype content type: {content_type[:80]!r}")
        if byte_size < 0:
            raise ValueError("byte_size must not be negative")
        expires_in = min(MAX_PRESIGN_S, max(1, round(expires_at.timestamp() - time.time())))
        params: dict[str, object] = {
            "Bucket": self.config.quarantine_bucket,
            "Key": key,
            "ContentType": ctype,
            "ContentLength": byte_size,
        }
        headers = [("Content-Type", ctype)]
        if self.config.if_none_match:
            params["IfNoneMatch"] = "*"
            headers.append(("If-None-Match", "*"))
        url = self._signer.generate_presigned_url("put_object", Params=params, ExpiresIn=expires_in)
        return UploadTarget(url=url, method="PUT", headers=tuple(headers), expires_at=expires_at)

    async def stat_raw(self, key: str) -> StoredObject | None:
        """The quarantined object's size and content type, or None if no bytes arrived."""
        s3 = await self._s3()
        try:
            head = await s3.head_object(Bucket=self.config.quarantine_bucket, Key=raw_key(key))
        except ClientError as exc:
            if _missing(exc):
                return None
            raise
        return StoredObject(size=head["ContentLength"], content_type=head.get("ContentType"))

    async def download_raw(self, key: str, dest: Path, *, max_bytes: int) -> int:
        """Stream the quarantined object to ``dest``; return its size. Raises
        FileNotFoundError, or ValueError over ``max_bytes`` (``dest`` removed)."""
        s3 = await self._s3()
        try:
            obj = await s3.get_object(Bucket=self.config.quarantine_bucket, Key=raw_key(key))
        except ClientError as exc:
            if _missing(exc):
                raise FileNotFoundError(key) from None
            raise
        body = obj["Body"]
        try:
            if obj["ContentLength"] > max_bytes:
                raise ValueError(
                    f"the object is {obj['ContentLength']} bytes, over the limit of {max_bytes}"
                )
            out: IO[bytes] = await asyncio.to_thread(dest.open, "wb")
            size = 0
            try:
                async for chunk in body.iter_chunks(CHUNK_BYTES):
                    size += len(chunk)
                    if size > max_bytes:
                        raise ValueError(f"the object grew over the limit of {max_bytes}")
                    await asyncio.to_thread(out.write, chunk)
            except BaseException:
                out.close()
                await asyncio.to_thread(dest.unlink, missing_ok=True)
                raise
            out.close()
            return size
        finally:
            body.close()

    async def delete_raw(self, key: str) -> None:
        """Delete the quarantined object (a missing one is no error)."""
        s3 = await self._s3()
        await s3.delete_object(Bucket=self.config.quarantine_bucket, Key=raw_key(key))

    async def put_delivery(self, key: str, source: Path, *, content_type: str) -> None:
        """Upload ``source`` to delivery ``key``, immutable (:data:`IMMUTABLE`)."""
        delivery_key(key)
        ctype = normalized_content_type(content_type)
        if ctype is None:
            raise ValueError(f"not a type/subtype content type: {content_type[:80]!r}")
        s3: Any = await self._s3()  # aioboto3 adds upload_file (s3transfer) to the client
        await s3.upload_file(
            str(source),
            self.config.delivery_bucket,
            key,
            ExtraArgs={"ContentType": ctype, "CacheControl": IMMUTABLE},
        )

    async def delete_delivery(self, keys: Sequence[str]) -> None:
        """Delete delivered objects, one request each (GCS has no multi-delete)."""
        for key in keys:
            delivery_key(key)
        s3 = await self._s3()
        gate = asyncio.Semaphore(DELETE_CONCURRENCY)

        async def delete(key: str) -> None:
            async with gate:
                await s3.delete_object(Bucket=self.config.delivery_bucket, Key=key)

        await asyncio.gather(*(delete(k) for k in keys))

    def public_url(self, key: str) -> str:
        """``<delivery base URL>/<key>``."""
        return f"{self.config.delivery_base_url}/{quote(delivery_key(key))}"


def _missing(exc: ClientError) -> bool:
    error = exc.response.get("Error", {})
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return error.get("Code") in _MISSING or status == 404
