"""Typed errors of the media area (docs/api/media.md "Media")."""

from __future__ import annotations

import uuid

from domain.errors import DomainError


class UploadUnusableError(DomainError):
    """An upload a post names is unusable: ``reason`` ``USED`` (by another post, or
    twice), ``EXPIRED``, ``NOT_UPLOADED`` (not the declared size) or ``FAILED``."""

    code = "UPLOAD_UNUSABLE"

    def __init__(self, upload_id: uuid.UUID, reason: str, message: str, *, index: int) -> None:
        super().__init__(message)
        self.upload_id = upload_id
        self.reason = reason
        self.index = index  # its position in the post's list of uploads (0-based)


class UploadNotFoundError(DomainError):
    """No upload of the caller has that id (someone else's is not the caller's)."""

    code = "UPLOAD_NOT_FOUND"

    def __init__(self, upload_id: uuid.UUID, *, index: int) -> None:
        super().__init__("You have no upload with that id.")
        self.upload_id = upload_id
        self.index = index  # its position in the post's list of uploads (0-based)


class MediaUrlNotAllowedError(DomainError):
    """An external media URL not https on a MEDIA_URL_ALLOWED_HOSTS host."""

    code = "MEDIA_URL_NOT_ALLOWED"

    def __init__(self, url: str) -> None:
        super().__init__(
            "External media URLs are accepted only over https from the allowed hosts; "
            "upload the file with createMediaUpload instead."
        )
        self.url = url
