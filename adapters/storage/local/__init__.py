"""The object store on local disk (MEDIA_STORAGE=local). Uploads go to Roost's
``PUT /uploads/<key>`` with a signed URL; every write is atomic, and a completed upload
is never replaced."""

from adapters.storage.local.store import DeliveredFile, LocalObjectStore
from adapters.storage.local.uploads import (
    RawUpload,
    UploadGrant,
    UploadRefusedError,
    UploadTooLargeError,
)

__all__ = [
    "DeliveredFile",
    "LocalObjectStore",
    "RawUpload",
    "UploadGrant",
    "UploadRefusedError",
    "UploadTooLargeError",
]
