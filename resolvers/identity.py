"""Account mutations: signUp, logIn, refreshSession, logOut, updateProfile."""

from __future__ import annotations

import uuid

import strawberry

from domain.identity.log_in import log_in
from domain.identity.log_out import log_out
from domain.identity.refresh_session import refresh_session
from domain.identity.sign_up import sign_up
from domain.identity.update_profile import REMOVE, update_profile
from schema.context import Info
from schema.errors import typed_errors
from schema.identity.inputs import (
    LogInInput,
    LogOutInput,
    RefreshSessionInput,
    SignUpInput,
    UpdateProfileInput,
)
from schema.identity.results import (
    LogInResult,
    LogInSuccess,
    LogOutResult,
    LogOutSuccess,
    RefreshSessionResult,
    RefreshSessionSuccess,
    SignUpResult,
    SignUpSuccess,
    UpdateProfileResult,
    UpdateProfileSuccess,
)
from schema.ids import decode_global_id
from schema.users.types import User


def _unset_to_none(value):
    return None if value is strawberry.UNSET else value


@strawberry.type
class IdentityMutations:
    @strawberry.mutation(description="Create an account and sign in.")
    @typed_errors
    async def sign_up(self, info: Info, input: SignUpInput) -> SignUpResult:
        ctx = info.context
        auth = await sign_up(
            ctx.engine,
            ctx.tokens,
            username=input.username,
            email=input.email,
            password=input.password,
            display_name=input.display_name,
            dispatcher=ctx.dispatcher,
        )
        ctx.signed_in = auth.user.id
        return SignUpSuccess(
            user=User.from_record(auth.user),
            access_token=auth.access_token,
            refresh_token=auth.refresh_token,
        )

    @strawberry.mutation(
        description="Sign in with username (any case) and password. An account you asked to "
        "delete answers AccountPendingDeletionError (with the right password) until it is "
        "purged: cancelAccountDeletion restores it."
    )
    @typed_errors
    async def log_in(self, info: Info, input: LogInInput) -> LogInResult:
        ctx = info.context
        auth = await log_in(
            ctx.engine, ctx.tokens, username=input.username, password=input.password
        )
        ctx.signed_in = auth.user.id
        return LogInSuccess(
            user=User.from_record(auth.user),
            access_token=auth.access_token,
            refresh_token=auth.refresh_token,
        )

    @strawberry.mutation(
        description="Exchange a refresh token for its successor and a new access token; the"
        " same token again within the grace window (10 s) gets the same successor, later"
        " it ends the session."
    )
    @typed_errors
    async def refresh_session(self, info: Info, input: RefreshSessionInput) -> RefreshSessionResult:
        ctx = info.context
        auth = await refresh_session(ctx.engine, ctx.tokens, input.refresh_token, ctx.sessions)
        return RefreshSessionSuccess(
            user=User.from_record(auth.user),
            access_token=auth.access_token,
            refresh_token=auth.refresh_token,
        )

    @strawberry.mutation(
        description="End one session (or all of yours): its tokens stop working at once."
    )
    @typed_errors
    async def log_out(self, info: Info, input: LogOutInput) -> LogOutResult:
        viewer = info.context.require_viewer()
        revoked = await log_out(
            info.context.engine, viewer, input.refresh_token, info.context.sessions
        )
        return LogOutSuccess(ended_sessions=revoked)

    @strawberry.mutation(
        description="Change your display name, bio, website, avatar and/or privacy; only the "
        "fields you give change."
    )
    @typed_errors
    async def update_profile(self, info: Info, input: UpdateProfileInput) -> UpdateProfileResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        avatar: uuid.UUID | str | None = None
        if input.avatar_upload_id is None:
            avatar = REMOVE
        elif input.avatar_upload_id is not strawberry.UNSET:
            avatar = decode_global_id(input.avatar_upload_id, "MediaUpload", "avatarUploadId")
        rec = await ctx.mutate(
            update_profile,
            viewer,
            display_name=_unset_to_none(input.display_name),
            bio=_unset_to_none(input.bio),
            website=_unset_to_none(input.website),
            avatar_upload_id=avatar,
            is_private=_unset_to_none(input.is_private),
            store=ctx.media.store if ctx.media is not None else None,
        )
        return UpdateProfileSuccess(user=User.from_record(rec))
