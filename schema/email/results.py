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
