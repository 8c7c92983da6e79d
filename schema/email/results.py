"""Payloads and result unions of the e-mail mutations."""

from __future__ import annotations

from typing import Annotated

import strawberry

from schema.errors import (
    EmailAlreadyVerifiedError,
    EmailTakenError,
    InvalidTokenError,
    TooManyMailsError,
    ValidationError,
    WrongPasswordError,
)
from schema.refs import UserRef


@strawberry.type(description="The address is verified; `user` is its account.")
class VerifyEmailSuccess:
    user: UserRef


@strawberry.type(description="A verification code is on its way to `email` (from the worker).")
class RequestEmailVerificationSuccess:
    email: str


@strawberry.type(description="The address changed; a verification code is on its way to it.")
class ChangeEmailSuccess:
    user: UserRef


#: The one answer to every well-formed reset request, whether or not an account matched.
RESET_REQUESTED = (
    "If an account has this e-mail address or username, a password reset code is on its "
    "way to its e-mail address."
)


@strawberry.type(
    description="The request was taken. The same answer whether or not an account matched."
)
class RequestPasswordResetSuccess:
    message: str = RESET_REQUESTED


@strawberry.type(description="The password is set; every session of the account ended.")
class ResetPasswordSuccess:
    ended_sessions: int


VerifyEmailResult = Annotated[
    VerifyEmailSuccess | InvalidTokenError, strawberry.union("VerifyEmailResult")
]
RequestEmailVerificationResult = Annotated[
    RequestEmailVerificationSuccess
    | EmailAlreadyVerifiedError
    | TooManyMailsError
    | ValidationError,
    strawberry.union("RequestEmailVerificationResult"),
]
ChangeEmailResult = Annotated[
    ChangeEmailSuccess | ValidationError | EmailTakenError | WrongPasswordError,
    strawberry.union("ChangeEmailResult"),
]
RequestPasswordResetResult = Annotated[
    RequestPasswordResetSuccess | ValidationError, strawberry.union("RequestPasswordResetResult")
]
ResetPasswordResult = Annotated[
    ResetPasswordSuccess | InvalidTokenError | ValidationError,
    strawberry.union("ResetPasswordResult"),
]
