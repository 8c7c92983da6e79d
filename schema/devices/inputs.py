"""Inputs of the registerDevice and unregisterDevice mutations."""

from __future__ import annotations

import strawberry

from schema.devices.types import DevicePlatform


@strawberry.input
class RegisterDeviceInput:
    platform: DevicePlatform
    token: str = strawberry.field(
        description="The push token of this app install (FCM registration token, APNs "
        "device token, Web Push): 1-4096 printable ASCII characters."
    )


@strawberry.input
class UnregisterDeviceInput:
    token: str
