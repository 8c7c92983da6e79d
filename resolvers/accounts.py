"""Account lifecycle mutations: changePassword, deleteAccount, cancelAccountDeletion,
exportMyData (docs/api/account-lifecycle.md "Account lifecycle")."""

from __future__ import annotations

import strawberry

from domain.accounts.cancel_deletion import cancel_account_deletion
from domain.accounts.delete_account import delete_account
from domain.accounts.request_export import request_export
from domain.identity.change_password import change_password
from schema.accounts.inputs import (
    CancelAccountDeletionInput,
    ChangePasswordInput,
    DeleteAccountInput,
)
from schema.accounts.results import (
    CancelAccountDeletionResult,
    CancelAccountDeletionSuccess,
    ChangePasswordResult,
    ChangePasswordSuccess,
    DeleteAccountResult,
    DeleteAccountSuccess,
    ExportMyDataSuccess,
)
from schema.accounts.types import DataExport
from schema.context import Info
from schema.errors import typed_errors
from schema.users.types import User


@strawberry.type
class AccountMutations:
    @strawberry.mutation(
        description="Change your password. Every other session of yours ends at once (its "
        "tokens stop working on every transport, its push devices are forgotten); the one "
        "you call from goes on."
    )
    @typed_errors
    async def change_password(self, info: Info, input: ChangePasswordInput) -> ChangePasswordResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        ended = await ctx.mutate(
            change_password,
            viewer,
            info.context.viewer_session_id(),
            current_password=input.current_password,
            new_password=input.new_password,
        )
        return ChangePasswordSuccess(ended_sessions=ended)

    @strawberry.mutation(
        description="Delete your account: it is hidden from everyone at once, every session "
        "ends, and its personal data is purged after the grace period (30 days), unless you "
        "cancel with cancelAccountDeletion before then."
    )
    @typed_errors
    async def delete_account(self, info: Info, input: DeleteAccountInput) -> DeleteAccountResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        due = await ctx.mutate(
            delete_account,
            viewer,
            password=input.password,
            grace=ctx.accounts.deletion_grace,
        )
        return DeleteAccountSuccess(deletion_due_at=due)

    @strawberry.mutation(
        description="Keep an account you asked to delete, within its grace period: it is "
        "restored as it was (follows, posts, counts) and you are signed in. No token needed "
        "(your sessions ended with the deletion). Also signs in an active account."
    )
    @typed_errors
    async def cancel_account_deletion(
        self, info: Info, input: CancelAccountDeletionInput
    ) -> CancelAccountDeletionResult:
        ctx = info.context
        auth = await ctx.mutate(
            cancel_account_deletion,
            ctx.tokens,
            username=input.username,
            password=input.password,
        )
        return CancelAccountDeletionSuccess(
            user=User.from_record(auth.user),
            access_token=auth.access_token,
            refresh_token=auth.refresh_token,
        )

    @strawberry.mutation(
        description="Ask for an archive of your data; the worker prepares it within seconds. "
        "Asking again while one is being prepared returns that one; a new one replaces the "
        "last. Read `viewer { dataExport { status url } }` for the download link."
    )
    async def export_my_data(self, info: Info) -> ExportMyDataSuccess:
        ctx = info.context
        viewer = ctx.require_viewer()
        record = await ctx.mutate(request_export, viewer)
        return ExportMyDataSuccess(export=DataExport.from_record(record))
