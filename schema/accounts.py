"""The account lifecycle's GraphQL contract: changePassword, deleteAccount,
cancelAccountDeletion and exportMyData, and the DataExport type (README "Account
lifecycle")."""

from __future__ import annotations

import datetime as dt
from enum import Enum
from typing import Annotated, Self

import strawberry

from domain.accounts.export_links import ExportLinkSigner
from domain.accounts.exports import ExportRecord, latest_export
from schema.context import Context
from schema.errors import (
    AccountPendingDeletionError,
    InvalidCredentialsError,
    ValidationError,
    WrongPasswordError,
)
from schema.identity import AuthPayload
from schema.ids import to_global_id

Info = strawberry.Info[Context, None]


@strawberry.input
class ChangePasswordInput:
    current_password: str
    new_password: str = strawberry.field(description="8–256 characters.")


@strawberry.type(
    description="The password is changed. Every other session of yours has ended (their "
    "tokens stop working at once, their push devices are forgotten); this one goes on."
)
class ChangePasswordSuccess:
    ended_sessions: int


@strawberry.input
class DeleteAccountInput:
    password: str = strawberry.field(description="Your current password, to confirm.")


@strawberry.type(
    description="Your account is hidden from everyone now and every session of yours has "
    "ended. Its personal data is purged at `deletionDueAt`; until then, "
    "cancelAccountDeletion (with your username and password) restores it."
)
class DeleteAccountSuccess:
    deletion_due_at: dt.datetime


@strawberry.input
class CancelAccountDeletionInput:
    username: str
    password: str


@strawberry.type(
    description="The deletion is cancelled: your account is back, and you are signed in."
)
class CancelAccountDeletionSuccess(AuthPayload):
    pass


@strawberry.enum(description="Where a data export is.")
class DataExportStatus(Enum):
    PENDING = "pending"
    READY = "ready"


@strawberry.type(
    description="An archive of your data (profile, posts, comments, likes, follows both "
    "ways, blocks, mutes, notifications) as gzip-compressed JSON, prepared by the worker."
)
class DataExport:
    id: strawberry.ID
    status: DataExportStatus
    requested_at: dt.datetime
    ready_at: dt.datetime | None
    expires_at: dt.datetime | None = strawberry.field(
        description="When the archive is deleted (null while it is being prepared)."
    )
    size_bytes: int | None = strawberry.field(description="Size of the gzip archive.")
    record: strawberry.Private[ExportRecord]

    @classmethod
    def from_record(cls, rec: ExportRecord) -> Self:
        """Build the GraphQL object from a domain record."""
        return cls(
            id=strawberry.ID(to_global_id("DataExport", rec.id)),
            status=DataExportStatus(rec.status),
            requested_at=rec.requested_at,
            ready_at=rec.ready_at,
            expires_at=rec.expires_at,
            size_bytes=rec.size_bytes,
            record=rec,
        )

    @strawberry.field(
        description="A link to download the archive (GET, no token needed), valid for 15 "
        "minutes from this read; null until the archive is ready. Read the field again "
        "for a fresh link."
    )
    def url(self, info: Info) -> str | None:
        if self.record.status != "ready":
            return None
        ctx = info.context
        path = ExportLinkSigner(ctx.tokens.secret).path(
            self.record.id, ttl_s=ctx.accounts.export_link_ttl.total_seconds()
        )
        base = ctx.accounts.public_base_url
        if base is None and ctx.request is not None:
            base = str(ctx.request.base_url)
        return (base or "").rstrip("/") + path


@strawberry.type(
    description="Your archive is being prepared (or is ready); read `viewer { dataExport }` "
    "until its status is READY, then download it from its url."
)
class ExportMyDataSuccess:
    export: DataExport


async def latest_data_export(info: Info, user_id) -> DataExport | None:
    """``viewer.dataExport``: the user's latest export that has not expired."""
    async with info.context.engine.connect() as conn:
        rec = await latest_export(conn, user_id)
    return DataExport.from_record(rec) if rec else None


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

__all__ = [
    "AccountPendingDeletionError",
    "CancelAccountDeletionInput",
    "CancelAccountDeletionResult",
    "CancelAccountDeletionSuccess",
    "ChangePasswordInput",
    "ChangePasswordResult",
    "ChangePasswordSuccess",
    "DataExport",
    "DeleteAccountInput",
    "DeleteAccountResult",
    "DeleteAccountSuccess",
    "ExportMyDataSuccess",
]
