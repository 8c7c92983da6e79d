"""Payloads and result unions of the media mutations."""

from __future__ import annotations

from typing import Annotated

import strawberry

from schema.errors import ValidationError
from schema.media.types import MediaUpload


@strawberry.type(description="The upload is reserved: send the bytes as `upload` says.")
class CreateMediaUploadSuccess:
    upload: MediaUpload


CreateMediaUploadResult = Annotated[
    CreateMediaUploadSuccess | ValidationError, strawberry.union("CreateMediaUploadResult")
]
