"""The object store on local disk (MEDIA_STORAGE=local, the default of ``make run`` and
``make test``), under one folder (folders.py lays it out).

A client sends an upload's bytes to Roost's own endpoint (``PUT /uploads/<key>``,
app/media_routes.py) with a URL this store signed: HMAC-SHA256 over the method, key,
content type, byte size and expiry (uploads.py). Every write is atomic: a temporary
file, fsynced, then linked (quarantine: never over an object that is there, so a
completed upload cannot be replaced) or renamed (delivery) into place. Keys follow
adapters/storage/keys.py; anything else is refused.
"""

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
