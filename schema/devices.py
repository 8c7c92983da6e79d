"""Push devices: the registerDevice / unregisterDevice inputs, payloads and result
unions, and the session a request's access token names."""

from __future__ import annotations

import datetime as dt
import uuid
from enum import Enum
from typing import Annotated, Self

import jwt
import strawberry

from domain.devices.store import DeviceRecord
from schema.context import Context
from schema.errors import ValidationError

Info = strawberry.Info[Context, None]


def viewer_session_id(info: Info) -> uuid.UUID:
    """The session of the request's access token (its ``sid`` claim): the one place that
    knows where a request's session comes from. Raises UNAUTHENTICATED like any
    signed-in field when there is no valid token."""
    info.context.require_viewer()  # verifies the token: signature, expiry, type
    claims = jwt.decode(info.context.bearer or "", options={"verify_signature": False})
    return uuid.UUID(claims["sid"])


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


@strawberry.input
class RegisterDeviceInput:
    platform: DevicePlatform
    token: str = strawberry.field(
        description="The push token of this app install (FCM registration token, APNs "
        "device token, Web Push): 1-4096 printable ASCII characters."
    )


@strawberry.type(description="The device receives your pushes until you log out of this session.")
class RegisterDeviceSuccess:
    device: Device


RegisterDeviceResult = Annotated[
    RegisterDeviceSuccess | ValidationError, strawberry.union("RegisterDeviceResult")
]


@strawberry.input
class UnregisterDeviceInput:
    token: str


@strawberry.type(description="The token receives no more pushes for you.")
class UnregisterDeviceSuccess:
    removed: bool = strawberry.field(
        description="Whether the token was registered to you (false: nothing to do)."
    )


UnregisterDeviceResult = Annotated[
    UnregisterDeviceSuccess | ValidationError, strawberry.union("UnregisterDeviceResult")
]
