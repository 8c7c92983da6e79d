"""Payloads and result unions of the identity mutations (AuthPayload: a user and a
fresh token pair)."""

from __future__ import annotations

from typing import Annotated

import strawberry

from schema.errors import (
    AccountPendingDeletionError,
    EmailTakenError,
    InvalidCredentialsError,
    InvalidTokenError,
    NotFoundError,
    UploadNotFoundError,
    UploadUnusableError,
    UsernameTakenError,
    ValidationError,
)
from schema.refs import UserRef


@strawberry.type(description="A session: the user and a fresh token pair.")
class AuthPayload:
    user: UserRef
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


@strawberry.type(description="The session (or every session of yours) has ended.")
class LogOutSuccess:
    ended_sessions: int = strawberry.field(description="How many sessions ended now.")

    @strawberry.field(deprecation_reason="Use `endedSessions` (the name changePassword uses).")
    def revoked_sessions(self) -> int:
        return self.ended_sessions


@strawberry.type
class UpdateProfileSuccess:
    user: UserRef


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
    UpdateProfileSuccess
    | ValidationError
    | NotFoundError
    | UploadNotFoundError
    | UploadUnusableError,
    strawberry.union("UpdateProfileResult"),
]
