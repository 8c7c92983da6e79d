"""The local store's signed upload URLs (HMAC-SHA256) and the receiving of uploads."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Literal

from adapters.storage.keys import InvalidKeyError, normalized_content_type, raw_key
from adapters.storage.local.folders import CHUNK_BYTES, Folders

#: The HMAC message's first line: a signature of another kind never verifies here.
_CONTEXT = "roost:media-upload:v1"
_DIGITS = re.compile(r"[0-9]{1,19}")
_HEX64 = re.compile(r"[0-9a-f]{64}")

Refusal = Literal["bad", "forged", "expired", "exists"]


class UploadRefusedError(Exception):
    """``reason``: ``bad`` (malformed), ``forged``, ``expired``, ``exists``."""

    def __init__(self, reason: Refusal) -> None:
        super().__init__(reason)
        self.reason: Refusal = reason


class UploadTooLargeError(Exception):
    """More bytes arrived than the upload's signed size."""


@dataclass(frozen=True, slots=True)
class UploadGrant:
    """``size`` bytes of ``content_type`` at ``key`` until ``expires`` (Unix s)."""

    key: str
    content_type: str
    size: int
    expires: int


class UploadSigner:
    """Signs and checks upload URLs with ``key`` (at least 32 bytes)."""

    def __init__(self, key: bytes) -> None:
        if len(key) < 32:
            raise ValueError("the upload signing key must be at least 32 bytes")
        self._key = key

    def signature(self, key: str, content_type: str, size: int, expires: int) -> str:
        """The hex HMAC-SHA256 of (PUT, key, content type, size, expiry)."""
        message = f"{_CONTEXT}\nPUT\n{key}\n{content_type}\n{size}\n{expires}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def query(self, key: str, content_type: str, size: int, expires: int) -> dict[str, str]:
        """The query of the URL that allows this upload."""
        return {
            "type": content_type,
            "size": str(size),
            "expires": str(expires),
            "signature": self.signature(key, content_type, size, expires),
        }

    def check(self, key: str, query: Mapping[str, str], *, now: float | None = None) -> UploadGrant:
        """The grant of an upload URL; raises UploadRefusedError. The signature is
        checked (in constant time) before the expiry: a forged URL learns nothing."""
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
        expected = self.signature(key, ctype, grant.size, grant.expires)
        if not hmac.compare_digest(expected, signature):
            raise UploadRefusedError("forged")
        if (time.time() if now is None else now) >= grant.expires:
            raise UploadRefusedError("expired")
        return grant


class RawUpload:
    """One upload's bytes: :meth:`write` (UploadTooLargeError past the grant's size), then
    :meth:`commit` or :meth:`discard`; holds <= CHUNK_BYTES, nothing visible before commit."""

    def __init__(self, folders: Folders, grant: UploadGrant) -> None:
        self.folders = folders
        self.grant = grant
        self.received = 0
        self._buffer = bytearray()
        self._tmp = folders.tmp_path()
        self._file: IO[bytes] | None = None

    async def write(self, chunk: bytes) -> None:
        """Take ``chunk``; raises UploadTooLargeError (nothing written past the size)."""
        if self.received + len(chunk) > self.grant.size:
            raise UploadTooLargeError
        self.received += len(chunk)
        self._buffer += chunk
        if len(self._buffer) >= CHUNK_BYTES:
            data, self._buffer = self._buffer, bytearray()
            await asyncio.to_thread(self._write, data)

    def _write(self, data: bytes | bytearray) -> None:
        if self._file is None:
            self._file = self._tmp.open("xb")
        self._file.write(data)

    async def commit(self) -> None:
        """Fsync, then link at the key (never over one there). Raises
        UploadRefusedError("exists") or ValueError (fewer bytes than signed)."""
        if self.received != self.grant.size:
            await self.discard()
            raise ValueError("fewer bytes than the signed size")
        data, self._buffer = self._buffer, bytearray()
        try:
            await asyncio.to_thread(self._commit, data)
        except FileExistsError:
            raise UploadRefusedError("exists") from None
        finally:
            await self.discard()

    def _commit(self, data: bytes | bytearray) -> None:
        self._write(data)
        assert self._file is not None
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        key = self.grant.key
        self.folders.write_meta(
            key, {"content_type": self.grant.content_type, "expires": self.grant.expires}
        )
        final = self.folders.quarantine / key
        final.parent.mkdir(parents=True, exist_ok=True)
        os.link(self._tmp, final)  # FileExistsError when another upload won

    async def discard(self) -> None:
        """Drop what arrived (the temporary file); safe to call twice."""
        self._buffer = bytearray()
        await asyncio.to_thread(self._discard)

    def _discard(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
        with contextlib.suppress(OSError):  # gone, or a failing disk: nothing to keep
            self._tmp.unlink()
