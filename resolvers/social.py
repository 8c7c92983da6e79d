"""Follow-graph mutations: follow, unfollow, block, unblock, approveFollowRequest,
rejectFollowRequest (input: { userId })."""

from __future__ import annotations

import strawberry

from domain.errors import NotFoundError
from domain.social.approve_follow_request import approve_follow_request
from domain.social.block_user import block_user
from domain.social.follow_user import follow_user
from domain.social.reject_follow_request import reject_follow_request
from domain.social.unblock_user import unblock_user
from domain.social.unfollow_user import unfollow_user
from resolvers.query import visible_user
from schema.context import Info
from schema.errors import typed_errors
from schema.ids import decode_global_id
from schema.social.inputs import UserTargetInput
from schema.social.results import (
    ApproveFollowRequestResult,
    ApproveFollowRequestSuccess,
    BlockResult,
    BlockSuccess,
    FollowRequestedSuccess,
    FollowResult,
    FollowSuccess,
    RejectFollowRequestResult,
    RejectFollowRequestSuccess,
    UnblockResult,
    UnblockSuccess,
    UnfollowResult,
    UnfollowSuccess,
)


async def _target_user(info: Info, user_id):
    """Return the visible User ``user_id`` or raise NotFoundError (missing, banned, deleted).

    The returned object resolves its counts and flags through the context's loaders
    when the response is built, so it stays correct after ``reset_loaders``.
    """
    user = await visible_user(info, user_id)
    if user is None:
        raise NotFoundError("No user has that id.")
    return user


@strawberry.type
class SocialMutations:
    @strawberry.mutation(
        description="Follow a user; a private account gets a follow request instead. Idempotent."
    )
    @typed_errors
    async def follow(self, info: Info, input: UserTargetInput) -> FollowResult:
        ctx = info.context
        viewer = await ctx.verified_viewer("follow")
        target = decode_global_id(input.user_id, "User", "userId")
        outcome = await ctx.mutate(follow_user, viewer, target)
        user = await _target_user(info, target)
        if outcome.requested:
            return FollowRequestedSuccess(user=user)
        return FollowSuccess(user=user)

    @strawberry.mutation(
        description="Stop following a user, or withdraw your pending request. Idempotent."
    )
    @typed_errors
    async def unfollow(self, info: Info, input: UserTargetInput) -> UnfollowResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        target = decode_global_id(input.user_id, "User", "userId")
        user = await _target_user(info, target)  # before writing: NotFound changes nothing
        await ctx.mutate(unfollow_user, viewer, target)
        return UnfollowSuccess(user=user)

    @strawberry.mutation(description="Block a user: ends follows both ways, refuses new ones.")
    @typed_errors
    async def block(self, info: Info, input: UserTargetInput) -> BlockResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        target = decode_global_id(input.user_id, "User", "userId")
        user = await _target_user(info, target)  # before writing: NotFound changes nothing
        await ctx.mutate(block_user, viewer, target)
        return BlockSuccess(user=user)

    @strawberry.mutation(description="Lift a block. Ended follows stay ended. Idempotent.")
    @typed_errors
    async def unblock(self, info: Info, input: UserTargetInput) -> UnblockResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        target = decode_global_id(input.user_id, "User", "userId")
        user = await _target_user(info, target)  # before writing: NotFound changes nothing
        await ctx.mutate(unblock_user, viewer, target)
        return UnblockSuccess(user=user)

    @strawberry.mutation(description="Approve a pending request to follow you. Idempotent.")
    @typed_errors
    async def approve_follow_request(
        self, info: Info, input: UserTargetInput
    ) -> ApproveFollowRequestResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        requester = decode_global_id(input.user_id, "User", "userId")
        await ctx.mutate(approve_follow_request, viewer, requester)
        return ApproveFollowRequestSuccess(user=await _target_user(info, requester))

    @strawberry.mutation(description="Reject a pending request to follow you.")
    @typed_errors
    async def reject_follow_request(
        self, info: Info, input: UserTargetInput
    ) -> RejectFollowRequestResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        requester = decode_global_id(input.user_id, "User", "userId")
        user = await _target_user(info, requester)  # before writing: NotFound changes nothing
        await ctx.mutate(reject_follow_request, viewer, requester)
        return RejectFollowRequestSuccess(user=user)
