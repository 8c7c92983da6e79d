"""Device mutations: registerDevice, unregisterDevice."""

from __future__ import annotations

import strawberry

from domain.devices.register_device import register_device
from domain.devices.unregister_device import unregister_device
from schema.context import Info
from schema.devices.inputs import RegisterDeviceInput, UnregisterDeviceInput
from schema.devices.results import (
    RegisterDeviceResult,
    RegisterDeviceSuccess,
    UnregisterDeviceResult,
    UnregisterDeviceSuccess,
)
from schema.devices.types import Device
from schema.errors import typed_errors


@strawberry.type
class DeviceMutations:
    @strawberry.mutation(
        description="Register this app install's push token, for this session: logging "
        "out of it forgets the token, and so does the push provider refusing it. "
        "Idempotent (register it at every start)."
    )
    @typed_errors
    async def register_device(self, info: Info, input: RegisterDeviceInput) -> RegisterDeviceResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        rec = await register_device(
            ctx.engine,
            viewer,
            info.context.viewer_session_id(),
            platform=input.platform.value,
            token=input.token,
        )
        return RegisterDeviceSuccess(device=Device.from_record(rec))

    @strawberry.mutation(description="Stop pushes to this token. Idempotent.")
    @typed_errors
    async def unregister_device(
        self, info: Info, input: UnregisterDeviceInput
    ) -> UnregisterDeviceResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        removed = await unregister_device(ctx.engine, viewer, input.token)
        return UnregisterDeviceSuccess(removed=removed)
