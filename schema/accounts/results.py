"""Payloads and result unions of the account lifecycle mutations."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

import strawberry

from schema.accounts.types import DataExport
from schema.errors import InvalidCredentialsError, ValidationError, WrongPasswordError
from schema.identity.results import AuthPayload


@strawberry.type(
    description="The password is changed. Every other session of yours has ended (their "
    "tokens stop working at once, their push devices are forgotten); this one goes on."
)
class ChangePasswordSuccess:
    ended_sessions: int


@strawberry.type(
    description="Your account is hidden from everyone now and every session of yours has "
    "ended. Its personal data is purged at `deletionDueAt`; until then, "
    "cancelAccountDeletion (with your username and password) restores it."
)
class DeleteAccountSuccess:
    deletion_due_at: dt.datetime


@strawberry.type(
    description="The deletion is cancelled: your account is back, and you are signed in."
)
class CancelAccountDeletionSuccess(AuthPayload):
    pass


@strawberry.type(
    description="Your archive is being prepared (or is ready); read `viewer { dataExport }` "
    "until its status is READY, then download it from its url."
)
class ExportMyDataSuccess:
    export: DataExport


ChangePasswordResult = Annotated[
    ChangePasswordSuccess | ValidationError | WrongPasswordError,
    strawberry.union("ChangePasswordResult"),
]
DeleteAccountResult = Annotated[
    DeleteAccountSuccess | WrongPasswordError, strawberry.union("DeleteAccountResult")
]
CancelAccountDeletionResult = Annotated[
    CancelAccountDeletionSuccess | InvalidCredentialsError,
    strawberry.union("CancelAccountDeletionResult"),
]
