"""``LocalObjectStore``: the object store port on a folder (adapters/storage/local)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import mimetypes
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlencode

from adapters.storage.keys import InvalidKeyError, delivery_key, normalized_content_type, raw_key
from adapters.storage.local.folders import (
    CHUNK_BYTES,
    Folders,
    copy_at_most,
    remove_empty_parents,
)
from adapters.storage.local.uploads import (
    RawUpload,
    UploadGrant,
    UploadRefusedError,
    UploadSigner,
)
from domain.media.ports import StoredObject, UploadTarget


@dataclass(frozen=True, slots=True)
class DeliveredFile:
    """A published object on disk: its path, ``os.stat`` result and content type."""

    path: Path
    stat: os.stat_result
    content_type: str


class LocalObjectStore:
    """``domain.media.ports.ObjectStore`` on the folder ``root``: uploads to
    ``<upload_base_url>/uploads/<key>``, delivery under ``public_base_url``."""

    def __init__(
        self,
        root: Path,
        *,
        signing_key: bytes,
        upload_base_url: str,
        public_base_url: str,
    ) -> None:
        self.signer = UploadSigner(signing_key)
        self.folders = Folders(root)
        self.root = root
        self.quarantine, self.delivery, self.tmp = (
            self.folders.quarantine,
            self.folders.delivery,
            self.folders.tmp,
        )
        self.upload_base_url = upload_base_url.rstrip("/")
        self.public_base_url = public_base_url.rstrip("/")

    def presign_upload(
        self, key: str, *, content_type: str, byte_size: int, expires_at: dt.datetime
    ) -> UploadTarget:
        """A signed ``PUT`` URL; raises InvalidKeyError / ValueError."""
        raw_key(key)
        ctype = normalized_content_type(content_type)
        if ctype is None:
            raise ValueError(f"not a type/subtype content type: {content_type[:80]!r}")
        if byte_size < 0:
            raise ValueError("byte_size must not be negative")
        expires = int(expires_at.timestamp())
        query = urlencode(self.signer.query(key, ctype, byte_size, expires))
        return UploadTarget(
            url=f"{self.upload_base_url}/uploads/{quote(key)}?{query}",
            method="PUT",
            headers=(("Content-Type", ctype),),
            expires_at=dt.datetime.fromtimestamp(expires, dt.UTC),
        )

    def check_upload(
        self, key: str, query: Mapping[str, str], *, now: float | None = None
    ) -> UploadGrant:
        """The grant of an upload URL (UploadSigner.check)."""
        return self.signer.check(key, query, now=now)

    def begin_upload(self, grant: UploadGrant) -> RawUpload:
        """A receiver of ``grant``'s bytes; UploadRefusedError("exists") if the key was
        ever uploaded."""
        if (self.quarantine / grant.key).exists() or self.folders.tombstone(
            grant.key, grant.expires
        ).exists():
            raise UploadRefusedError("exists")
        return RawUpload(self.folders, grant)

    async def stat_raw(self, key: str) -> StoredObject | None:
        """The quarantined object's size and signed content type, or None."""
        return await asyncio.to_thread(self._stat, raw_key(key))

    def _stat(self, key: str) -> StoredObject | None:
        try:
            st = (self.quarantine / key).stat()
        except FileNotFoundError:
            return None
        ctype = self.folders.read_meta(key).get("content_type")
        return StoredObject(size=st.st_size, content_type=ctype if isinstance(ctype, str) else None)

    async def download_raw(self, key: str, dest: Path, *, max_bytes: int) -> int:
        """Copy the quarantined object to ``dest`` (:func:`copy_at_most`)."""
        source = self.quarantine / raw_key(key)
        return await asyncio.to_thread(copy_at_most, source, dest, max_bytes)

    async def delete_raw(self, key: str) -> None:
        """Delete the quarantined object, tombstoned while its upload URL works."""
        await asyncio.to_thread(self._delete_raw, raw_key(key))

    def _delete_raw(self, key: str) -> None:
        expires = self.folders.read_meta(key).get("expires")
        now = time.time()
        if isinstance(expires, int) and expires > now:
            stone = self.folders.tombstone(key, expires)
            stone.parent.mkdir(parents=True, exist_ok=True)
            stone.touch()
        with contextlib.suppress(FileNotFoundError):
            (self.quarantine / key).unlink()
        with contextlib.suppress(FileNotFoundError):
            (self.folders.meta / key).unlink()
        self.folders.sweep_tombstones(now)

    async def put_delivery(self, key: str, source: Path, *, content_type: str) -> None:
        """Publish ``source`` at ``key`` atomically (fsynced, renamed); a retry rewrites it."""
        delivery_key(key)
        ctype = normalized_content_type(content_type)
        if ctype is None:
            raise ValueError(f"not a type/subtype content type: {content_type[:80]!r}")
        await asyncio.to_thread(self._put_delivery, key, source, ctype)

    def _put_delivery(self, key: str, source: Path, content_type: str) -> None:
        tmp = self.folders.tmp_path()
        try:
            with source.open("rb") as src, tmp.open("wb") as out:
                shutil.copyfileobj(src, out, CHUNK_BYTES)
                out.flush()
                os.fsync(out.fileno())
            self.folders.write_meta(key, {"content_type": content_type})
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
            for base in (self.delivery, self.folders.meta):
                path = base / key
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                remove_empty_parents(path.parent, base)

    def public_url(self, key: str) -> str:
        """``<public base>/<key>``."""
        return f"{self.public_base_url}/{quote(delivery_key(key))}"

    def delivery_file(self, key: str) -> DeliveredFile | None:
        """The published object at ``key``, or None. Blocking: run it in a thread."""
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
        ctype = self.folders.read_meta(key).get("content_type")
        if not isinstance(ctype, str):
            ctype = mimetypes.guess_type(key)[0] or "application/octet-stream"
        return DeliveredFile(path=path, stat=st, content_type=ctype)
