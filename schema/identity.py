"""Inputs, payloads and result unions of the account mutations."""

from __future__ import annotations

from typing import Annotated

import strawberry

from schema.errors import (
    AccountPendingDeletionError,
    EmailTakenError,
    InvalidCredentialsError,
    InvalidTokenError,
    NotFoundError,
    UsernameTakenError,
    ValidationError,
)
from schema.users import User


@strawberry.input
class SignUpInput:
    username: str = strawberry.field(description="3–30 of a-z 0-9 . _ (case-insensitive).")
    email: str
    password: str = strawberry.field(description="8–256 characters.")
    display_name: str = strawberry.field(description="1–50 characters, any script.")


@strawberry.input
class LogInInput:
    username: str
    password: str


@strawberry.input
class RefreshSessionInput:
    refresh_token: str


@strawberry.input
class LogOutInput:
    refresh_token: str | None = strawberry.field(
        default=None, description="The session to end; omit it to end all your sessions."
    )


@strawberry.input
class UpdateProfileInput:
    display_name: str | None = strawberry.UNSET
    bio: str | None = strawberry.UNSET
    is_private: bool | None = strawberry.field(
        default=strawberry.UNSET,
        description="Make the account private (true) or public (false). Going public "
        "accepts every pending follow request at once.",
    )


@strawberry.type(description="A session: the user and a fresh token pair.")
class AuthPayload:
    user: User
    access_token: str = strawberry.field(description="JWT for 'Authorization: Bearer', 15 min.")
    refresh_token: str = strawberry.field(description="Single-use; exchange via refreshSession.")


@strawberry.type
class SignUpSuccess(AuthPayload):
    pass


@strawberry.type
class LogInSuccess(AuthPayload):
    pass


@strawberry.type
class RefreshSessionSuccess(AuthPayload):
    pass


@strawberry.type
class LogOutSuccess:
    revoked_sessions: int


@strawberry.type
class UpdateProfileSuccess:
    user: User


SignUpResult = Annotated[
    SignUpSuccess | ValidationError | UsernameTakenError | EmailTakenError,
    strawberry.union("SignUpResult"),
]
LogInResult = Annotated[
    LogInSuccess | InvalidCredentialsError | AccountPendingDeletionError,
    strawberry.union("LogInResult"),
]
RefreshSessionResult = Annotated[
    RefreshSessionSuccess | InvalidTokenError, strawberry.union("RefreshSessionResult")
]
LogOutResult = Annotated[LogOutSuccess | ValidationError, strawberry.union("LogOutResult")]
UpdateProfileResult = Annotated[
    UpdateProfileSuccess | ValidationError | NotFoundError, strawberry.union("UpdateProfileResult")
]
