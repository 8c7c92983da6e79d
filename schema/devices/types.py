"""The ``Device`` type: a device that receives a user's push notifications."""

from __future__ import annotations

import datetime as dt
from enum import Enum
from typing import Self

import strawberry

from domain.devices.store import DeviceRecord


@strawberry.enum(description="Where a push token comes from.")
class DevicePlatform(Enum):
    IOS = "ios"
    ANDROID = "android"
    WEB = "web"


@strawberry.type(description="A device that receives your push notifications.")
class Device:
    platform: DevicePlatform
    token: str
    registered_at: dt.datetime = strawberry.field(description="When it was last registered.")

    @classmethod
    def from_record(cls, rec: DeviceRecord) -> Self:
        """Build the GraphQL object from a domain record."""
        return cls(
            platform=DevicePlatform(rec.platform),
            token=rec.token,
            registered_at=rec.registered_at,
        )
