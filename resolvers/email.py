"""E-mail mutations: verifyEmail, requestEmailVerification, changeEmail,
requestPasswordReset, resetPassword (docs/api/email.md)."""

from __future__ import annotations

import strawberry

from domain.identity.change_email import change_email
from domain.identity.request_email_verification import request_email_verification
from domain.identity.request_password_reset import request_password_reset
from domain.identity.reset_password import reset_password
from domain.identity.verify_email import verify_email
from schema.context import Info
from schema.email.inputs import (
    ChangeEmailInput,
    RequestPasswordResetInput,
    ResetPasswordInput,
    VerifyEmailInput,
)
from schema.email.results import (
    ChangeEmailResult,
    ChangeEmailSuccess,
    RequestEmailVerificationResult,
    RequestEmailVerificationSuccess,
    RequestPasswordResetResult,
    RequestPasswordResetSuccess,
    ResetPasswordResult,
    ResetPasswordSuccess,
    VerifyEmailResult,
    VerifyEmailSuccess,
)
from schema.errors import typed_errors
from schema.users.types import User


@strawberry.type
class EmailMutations:
    @strawberry.mutation(
        description="Verify your e-mail address with the code mailed to it (no sign-in "
        "needed). A code works once, before it expires, and only while the address is the "
        "account's."
    )
    @typed_errors
    async def verify_email(self, info: Info, input: VerifyEmailInput) -> VerifyEmailResult:
        rec = await info.context.mutate(verify_email, input.token)
        return VerifyEmailSuccess(user=User.from_record(rec))

    @strawberry.mutation(
        description="Mail your address a new verification code (at most "
        "MAIL_PER_ACCOUNT_PER_HOUR an hour, sign-up's included)."
    )
    @typed_errors
    async def request_email_verification(self, info: Info) -> RequestEmailVerificationResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        email = await ctx.mutate(request_email_verification, viewer, config=ctx.mail)
        return RequestEmailVerificationSuccess(email=email)

    @strawberry.mutation(
        description="Change your e-mail address (confirmed by your password). The new "
        "address is unverified until you use the code mailed to it."
    )
    @typed_errors
    async def change_email(self, info: Info, input: ChangeEmailInput) -> ChangeEmailResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        rec = await ctx.mutate(change_email, viewer, email=input.email, password=input.password)
        return ChangeEmailSuccess(user=User.from_record(rec))

    @strawberry.mutation(
        description="Ask for a password reset code, by e-mail address or username (no "
        "sign-in). The answer is the same whether or not an account matches; the account "
        "receives at most MAIL_PER_ACCOUNT_PER_HOUR reset mails an hour."
    )
    @typed_errors
    async def request_password_reset(
        self, info: Info, input: RequestPasswordResetInput
    ) -> RequestPasswordResetResult:
        await info.context.mutate(
            request_password_reset, email=input.email, username=input.username
        )
        return RequestPasswordResetSuccess()

    @strawberry.mutation(
        description="Set a new password with the code of a reset mail (no sign-in). The "
        "code works once and before it expires; every session of the account ends."
    )
    @typed_errors
    async def reset_password(self, info: Info, input: ResetPasswordInput) -> ResetPasswordResult:
        ended = await info.context.mutate(
            reset_password, input.token, new_password=input.new_password
        )
        return ResetPasswordSuccess(ended_sessions=ended)
