"""The object store on local disk (MEDIA_STORAGE=local, the default of ``make run`` and
``make test``), under one folder::

    <root>/quarantine/raw/<upload id>       raw uploads (never served)
    <root>/delivery/media/<post>/<upload>/… published variants (GET /media/…)
    <root>/meta/<key>                       each object's content type (JSON)
    <root>/tombstones/<hour>/raw/<id>       uploads deleted while their URL still works
    <root>/tmp/                             partial files (same file system: renames)

A client sends an upload's bytes to Roost's own endpoint (``PUT /uploads/<key>``,
app/media_routes.py) with a URL this store signed: HMAC-SHA256 over the method, key,
content type, byte size and expiry (:meth:`LocalObjectStore.check_upload`). Every write
is atomic: a temporary file, fsynced, then linked (quarantine: never over an object
that is there, so a completed upload cannot be replaced) or renamed (delivery) into
place. Keys follow adapters/storage/keys.py; anything else is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import hmac
import json
import mimetypes
import os
import re
import shutil
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal
from urllib.parse import quote, urlencode

from adapters.storage.keys import InvalidKeyError, delivery_key, normalized_content_type, raw_key
from domain.media.ports import StoredObject, UploadTarget

#: The HMAC message's first line: a signature of another kind never verifies here.
_CONTEXT = "roost:media-upload:v1"
#: Bytes a receiving upload buffers before one write to disk.
WRITE_BUFFER_BYTES = 1 << 20
_DIGITS = re.compile(r"[0-9]{1,19}")
_HEX64 = re.compile(r"[0-9a-f]{64}")

Refusal = Literal["bad", "forged", "expired", "exists"]


class UploadRefusedError(Exception):
    """An upload this store does not take: ``bad`` (malformed URL or key), ``forged``
    (signature), ``expired``, ``exists`` (the key was already uploaded)."""

    def __init__(self, reason: Refusal) -> None:
        super().__init__(reason)
        self.reason: Refusal = reason


class UploadTooLargeError(Exception):
    """More bytes arrived than the upload's signed size."""


@dataclass(frozen=True, slots=True)
class UploadGrant:
    """What a genuine, unexpired upload URL allows: ``size`` bytes of
    ``content_type`` at quarantine ``key``, until ``expires`` (Unix seconds)."""

    key: str
    content_type: str
    size: int
    expires: int


@dataclass(frozen=True, slots=True)
class DeliveredFile:
    """A published object on disk: its path, ``os.stat`` result and content type."""

    path: Path
    stat: os.stat_result
    content_type: str


class LocalObjectStore:
    """``domain.media.ports.ObjectStore`` on the folder ``root`` (module docstring).
    ``signing_key`` signs upload URLs under ``upload_base_url`` (Roost's origin, the
    route is ``/uploads/<key>``); delivery objects are public under
    ``public_base_url`` (``<base>/<key>``: Roost's ``/media/…`` or a CDN in front)."""

    def __init__(
        self,
        root: Path,
        *,
        signing_key: bytes,
        upload_base_url: str,
        public_base_url: str,
    ) -> None:
        if len(signing_key) < 32:
            raise ValueError("the upload signing key must be at least 32 bytes")
        self.root = root
        self._key = signing_key
        self.upload_base_url = upload_base_url.rstrip("/")
        self.public_base_url = public_base_url.rstrip("/")
        self.quarantine = root / "quarantine"
        self.delivery = root / "delivery"
        self.meta = root / "meta"
        self.tombstones = root / "tombstones"
        self.tmp = root / "tmp"
        for folder in (self.quarantine, self.delivery, self.meta, self.tombstones, self.tmp):
            folder.mkdir(parents=True, exist_ok=True)

    # --- signed upload URLs -----------------------------------------------------------

    def _signature(self, key: str, content_type: str, size: int, expires: int) -> str:
        message = f"{_CONTEXT}\nPUT\n{key}\n{content_type}\n{size}\n{expires}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def presign_upload(
        self, key: str, *, content_type: str, byte_size: int, expires_at: dt.datetime
    ) -> UploadTarget:
        """``PUT <upload base>/uploads/<key>?type=…&size=…&expires=…&signature=…`` with
        header ``Content-Type``. Raises InvalidKeyError / ValueError for a key, type or
        size this store would never accept."""
        raw_key(key)
        ctype = normalized_content_type(content_type)
        if ctype is None:
            raise ValueError(f"not a type/subtype content type: {content_type[:80]!r}")
        if byte_size < 0:
            raise ValueError("byte_size must not be negative")
        expires = int(expires_at.timestamp())
        query = urlencode(
            {
                "type": ctype,
                "size": byte_size,
                "expires": expires,
                "signature": self._signature(key, ctype, byte_size, expires),
            }
        )
        return UploadTarget(
            url=f"{self.upload_base_url}/uploads/{quote(key)}?{query}",
            method="PUT",
            headers=(("Content-Type", ctype),),
            expires_at=dt.datetime.fromtimestamp(expires, dt.UTC),
        )

    def check_upload(
        self, key: str, query: Mapping[str, str], *, now: float | None = None
    ) -> UploadGrant:
        """The grant of an upload URL's ``key`` and query. Raises UploadRefusedError:
        ``bad`` (malformed), ``forged`` (signature, compared in constant time; checked
        before the expiry, so a forged URL learns nothing), ``expired``."""
        try:
            raw_key(key)
        except InvalidKeyError:
            raise UploadRefusedError("bad") from None
        ctype = normalized_content_type(query.get("type", ""))
        size, expires = query.get("size", ""), query.get("expires", "")
        signature = query.get("signature", "")
        if (
            ctype is None
            or not _DIGITS.fullmatch(size)
            or not _DIGITS.fullmatch(expires)
            or not _HEX64.fullmatch(signature)
        ):
            raise UploadRefusedError("bad")
        grant = UploadGrant(key=key, content_type=ctype, size=int(size), expires=int(expires))
        expected = self._signature(key, ctype, grant.size, grant.expires)
        if not hmac.compare_digest(expected, signature):
            raise UploadRefusedError("forged")
        if (time.time() if now is None else now) >= grant.expires:
            raise UploadRefusedError("expired")
        return grant

    def _tombstone(self, key: str, expires: int) -> Path:
        return self.tombstones / str(expires // 3600) / key

    def begin_upload(self, grant: UploadGrant) -> RawUpload:
        """A receiver of ``grant``'s bytes. Raises UploadRefusedError("exists") when the
        key was uploaded already (even if processed and deleted since)."""
        if (self.quarantine / grant.key).exists() or self._tombstone(
            grant.key, grant.expires
        ).exists():
            raise UploadRefusedError("exists")
        return RawUpload(self, grant)

    # --- the port ---------------------------------------------------------------------

    async def stat_raw(self, key: str) -> StoredObject | None:
        """The quarantined object's size and signed content type, or None."""
        path = self.quarantine / raw_key(key)
        return await asyncio.to_thread(self._stat, path, key)

    def _stat(self, path: Path, key: str) -> StoredObject | None:
        try:
            st = path.stat()
        except FileNotFoundError:
            return None
        ctype = self._read_meta(key).get("content_type")
        return StoredObject(size=st.st_size, content_type=ctype if isinstance(ctype, str) else None)

    async def download_raw(self, key: str, dest: Path, *, max_bytes: int) -> int:
        """Copy the quarantined object to ``dest`` (in the file system, 1 MiB at a
        time); its size. FileNotFoundError when it is gone, ValueError when it is over
        ``max_bytes`` (then ``dest`` is not written)."""
        source = self.quarantine / raw_key(key)
        return await asyncio.to_thread(_copy_at_most, source, dest, max_bytes)

    async def delete_raw(self, key: str) -> None:
        """Delete the quarantined object. While its upload URL still works, a tombstone
        keeps the key from being uploaded again (tombstones go once their hour ends)."""
        raw_key(key)
        await asyncio.to_thread(self._delete_raw, key)

    def _delete_raw(self, key: str) -> None:
        meta = self._read_meta(key)
        expires = meta.get("expires")
        now = time.time()
        if isinstance(expires, int) and expires > now:
            stone = self._tombstone(key, expires)
            stone.parent.mkdir(parents=True, exist_ok=True)
            stone.touch()
        with contextlib.suppress(FileNotFoundError):
            (self.quarantine / key).unlink()
        with contextlib.suppress(FileNotFoundError):
            (self.meta / key).unlink()
        current_hour = int(now) // 3600
        for hour in os.listdir(self.tombstones):
            if hour.isdigit() and int(hour) < current_hour:
                shutil.rmtree(self.tombstones / hour, ignore_errors=True)

    async def put_delivery(self, key: str, source: Path, *, content_type: str) -> None:
        """Publish ``source`` at delivery ``key`` (copied, fsynced, renamed into place:
        a reader sees the whole file or none; a retry writes the same key again)."""
        delivery_key(key)
        ctype = normalized_content_type(content_type)
        if ctype is None:
            raise ValueError(f"not a type/subtype content type: {content_type[:80]!r}")
        await asyncio.to_thread(self._put_delivery, key, source, ctype)

    def _put_delivery(self, key: str, source: Path, content_type: str) -> None:
        tmp = self._tmp_path()
        try:
            with source.open("rb") as src, tmp.open("wb") as out:
                shutil.copyfileobj(src, out, WRITE_BUFFER_BYTES)
                out.flush()
                os.fsync(out.fileno())
            self._write_meta(key, {"content_type": content_type})
            final = self.delivery / key
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, final)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()

    async def delete_delivery(self, keys: Sequence[str]) -> None:
        """Delete delivered objects (and their folders once empty)."""
        for key in keys:
            delivery_key(key)
        await asyncio.to_thread(self._delete_delivery, list(keys))

    def _delete_delivery(self, keys: list[str]) -> None:
        for key in keys:
            for base in (self.delivery, self.meta):
                path = base / key
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                _remove_empty_parents(path.parent, base)

    def public_url(self, key: str) -> str:
        """``<public base>/<key>``."""
        return f"{self.public_base_url}/{quote(delivery_key(key))}"

    # --- serving ----------------------------------------------------------------------

    def delivery_file(self, key: str) -> DeliveredFile | None:
        """The published object at delivery ``key``, or None (no such object, or not a
        delivery key). Blocking (two system calls): callers run it in a thread."""
        try:
            delivery_key(key)
        except InvalidKeyError:
            return None
        path = self.delivery / key
        try:
            st = path.stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not path.is_file():
            return None
        ctype = self._read_meta(key).get("content_type")
        if not isinstance(ctype, str):
            ctype = mimetypes.guess_type(key)[0] or "application/octet-stream"
        return DeliveredFile(path=path, stat=st, content_type=ctype)

    # --- files ------------------------------------------------------------------------

    def _tmp_path(self) -> Path:
        return self.tmp / f"{uuid.uuid4().hex}.part"

    def _read_meta(self, key: str) -> dict[str, object]:
        try:
            data = json.loads((self.meta / key).read_bytes())
        except (FileNotFoundError, NotADirectoryError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write_meta(self, key: str, meta: dict[str, object]) -> None:
        path = self.meta / key
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._tmp_path()
        tmp.write_bytes(json.dumps(meta).encode())
        os.replace(tmp, path)


class RawUpload:
    """The bytes of one upload as they arrive: :meth:`write` chunks (UploadTooLargeError
    past the grant's size), then :meth:`commit` or :meth:`discard`. Holds at most
    WRITE_BUFFER_BYTES in memory; nothing is visible at the key before commit."""

    def __init__(self, store: LocalObjectStore, grant: UploadGrant) -> None:
        self.store = store
        self.grant = grant
        self.received = 0
        self._buffer = bytearray()
        self._tmp = store._tmp_path()
        self._file: IO[bytes] | None = None

    async def write(self, chunk: bytes) -> None:
        """Take ``chunk``; raises UploadTooLargeError (nothing written past the size)."""
        if self.received + len(chunk) > self.grant.size:
            raise UploadTooLargeError
        self.received += len(chunk)
        self._buffer += chunk
        if len(self._buffer) >= WRITE_BUFFER_BYTES:
            await self._flush()

    async def _flush(self) -> None:
        data, self._buffer = bytes(self._buffer), bytearray()
        await asyncio.to_thread(self._write, data)

    def _write(self, data: bytes) -> None:
        if self._file is None:
            self._file = self._tmp.open("xb")
        self._file.write(data)

    async def commit(self) -> None:
        """Make the upload visible at its key (fsynced, then linked: never over an
        object already there). Raises UploadRefusedError("exists") when another upload
        of the key won, ValueError when fewer bytes arrived than signed."""
        if self.received != self.grant.size:
            await self.discard()
            raise ValueError("fewer bytes than the signed size")
        data, self._buffer = bytes(self._buffer), bytearray()
        try:
            await asyncio.to_thread(self._commit, data)
        except FileExistsError:
            raise UploadRefusedError("exists") from None
        finally:
            await self.discard()

    def _commit(self, data: bytes) -> None:
        self._write(data)
        assert self._file is not None
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        key = self.grant.key
        self.store._write_meta(
            key, {"content_type": self.grant.content_type, "expires": self.grant.expires}
        )
        final = self.store.quarantine / key
        final.parent.mkdir(parents=True, exist_ok=True)
        os.link(self._tmp, final)  # FileExistsError when another upload won

    async def discard(self) -> None:
        """Drop what arrived (the temporary file); safe to call twice."""
        self._buffer = bytearray()
        await asyncio.to_thread(self._discard)

    def _discard(self) -> None:
        if self._file is not None:
            self._file.close()
        with contextlib.suppress(FileNotFoundError):
            self._tmp.unlink()


def _copy_at_most(source: Path, dest: Path, max_bytes: int) -> int:
    with source.open("rb") as src:
        size = os.fstat(src.fileno()).st_size
        if size > max_bytes:
            raise ValueError(f"the object is {size} bytes, over the limit of {max_bytes}")
        with dest.open("wb") as out:
            shutil.copyfileobj(src, out, WRITE_BUFFER_BYTES)
    return size


def _remove_empty_parents(folder: Path, base: Path) -> None:
    while folder != base and base in folder.parents:
        try:
            folder.rmdir()
        except OSError:  # not empty (or gone)
            return
        folder = folder.parent
