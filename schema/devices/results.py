"""Payloads and result unions of the registerDevice and unregisterDevice mutations."""

from __future__ import annotations

from typing import Annotated

import strawberry

from schema.devices.types import Device
from schema.errors import ValidationError


@strawberry.type(description="The device receives your pushes until you log out of this session.")
class RegisterDeviceSuccess:
    device: Device


RegisterDeviceResult = Annotated[
    RegisterDeviceSuccess | ValidationError, strawberry.union("RegisterDeviceResult")
]


@strawberry.type(description="The token receives no more pushes for you.")
class UnregisterDeviceSuccess:
    removed: bool = strawberry.field(
        description="Whether the token was registered to you (false: nothing to do)."
    )


UnregisterDeviceResult = Annotated[
    UnregisterDeviceSuccess | ValidationError, strawberry.union("UnregisterDeviceResult")
]
