"""Mute mutations: mute, unmute (input: { userId }; docs/api/mute-and-block.md "Mute and
blocked list")."""

from __future__ import annotations

import strawberry

from domain.social.errors import SelfMuteError
from domain.social.mute_user import mute_user
from domain.social.unmute_user import unmute_user
from resolvers.social import _target_user
from schema.context import Info
from schema.errors import typed_errors
from schema.ids import decode_global_id
from schema.mutes.results import MuteResult, MuteSuccess, UnmuteResult, UnmuteSuccess
from schema.social.inputs import UserTargetInput


@strawberry.type
class MuteMutations:
    @strawberry.mutation(
        description="Mute a user: their posts leave your home feed and their notifications "
        "leave yours, without unfollowing; they are not told. Idempotent."
    )
    @typed_errors
    async def mute(self, info: Info, input: UserTargetInput) -> MuteResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        target = decode_global_id(input.user_id, "User", "userId")
        if target == viewer:
            raise SelfMuteError()
        user = await _target_user(info, target)  # before writing: NotFound changes nothing
        await ctx.mutate(mute_user, viewer, target)
        return MuteSuccess(user=user)

    @strawberry.mutation(
        description="Unmute a user: their posts are back in your home feed at once. Idempotent."
    )
    @typed_errors
    async def unmute(self, info: Info, input: UserTargetInput) -> UnmuteResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        target = decode_global_id(input.user_id, "User", "userId")
        if target == viewer:
            raise SelfMuteError()
        user = await _target_user(info, target)
        await ctx.mutate(unmute_user, viewer, target)
        return UnmuteSuccess(user=user)
